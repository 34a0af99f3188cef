"""The spec of ``medaudit train supervised SPEC.yaml`` (paper 000 M0.12-M0.13), validated with pydantic.

Defaults follow the paper's protocol: torchvision ResNet-50 with one logit, a fixed
stratified 80/20 split of the source cohort (split seed 2026), five optimisation seeds
2026-2030 sharing that split, AdamW (lr 1e-4, weight decay 1e-4), batch 64, at most 20
epochs with early stopping after 5 epochs without a better selection AUROC, 224-px
training crops, evaluation resize 256 then centre crop 224, BF16 autocast where the
device supports it.  A smaller ``image_size`` is allowed for CPU smoke runs; the
evaluation resize then scales with it (``round(image_size * 256 / 224)``) unless given.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Literal

from pydantic import AfterValidator, Field, field_validator, model_validator

from medaudit.io.specfile import Strict as _Strict

__all__ = ["ManifestSpec", "SourceSpec", "SupervisedSpec", "load_supervised_spec"]

#: paper 000 M0.12: optimisation seeds 2026..2030
DEFAULT_SEEDS = (2026, 2027, 2028, 2029, 2030)




def _key_name(v: str) -> str:
    # the scores it writes join cohort, model and prompt into one key with '|'
    if not v or "|" in v:
        raise ValueError(f"must be a non-empty name without '|'; got {v!r}")
    return v


#: a cohort or model name: not empty, no '|'
KeyName = Annotated[str, AfterValidator(_key_name)]


class ManifestSpec(_Strict):
    """One cohort read from a manifest CSV (one row per image).

    The CSV needs an id, a path and a 0/1 label column (names configurable). ``select``
    keeps only rows whose column values are listed (e.g. ``{split: [val]}``), ``match``
    rows whose column matches a regular expression; every filter's counts are recorded.
    ``max_per_label`` keeps the first ``k`` images of each label in image-id order
    (deterministic subsets for smoke runs only).
    """

    cohort: KeyName
    manifest: str
    #: base folder of relative image paths; default: the manifest's folder
    image_root: str | None = None
    id_column: str = "image_id"
    path_column: str = "path"
    label_column: str = "label"
    #: the dataset name that exclusion CSVs use for these images; default: the manifest's
    #: ``dataset`` column when it has one, else the cohort name
    dataset: str | None = None
    negative_group_column: str | None = None
    select: dict[str, list[str]] = Field(default_factory=dict)
    #: keep only rows whose column matches a regular expression (``re.search``), e.g.
    #: ``{path: '[02468]\\.jpeg$'}`` to split one folder into two disjoint cohorts
    match: dict[str, str] = Field(default_factory=dict)
    max_per_label: int | None = Field(None, ge=1)

    @field_validator("match")
    @classmethod
    def _match(cls, v: dict[str, str]) -> dict[str, str]:
        for col, pattern in v.items():
            try:
                re.compile(pattern)
            except re.error as exc:
                raise ValueError(f"match[{col!r}]: invalid regular expression {pattern!r}: "
                                 f"{exc}") from None
        return v


class SourceSpec(ManifestSpec):
    """The source cohort: split once into optimisation and selection subsets."""

    #: stratify the split by this column (paper 000: TBX11K's three original classes);
    #: default: the label column
    stratify_column: str | None = None
    selection_fraction: float = Field(0.2, gt=0.0, lt=1.0)
    #: also score the selection subset as cohort ``<cohort>_selection`` (a threshold source
    #: for ``medaudit audit``; its model card marks it as used for checkpoint selection)
    score_selection: bool = True


class SupervisedSpec(_Strict):
    """A supervised ResNet-50 source model: data, protocol, seeds and optional exclusion."""

    name: KeyName = "resnet50"
    source: SourceSpec
    evaluation: list[ManifestSpec] = Field(default_factory=list)
    #: overlap-screen output (columns dataset, image_id, path, reason): when given, the
    #: original model AND the model retrained without every implicated image are produced
    exclusion: str | None = None
    image_size: int = Field(224, ge=64, le=1024)
    eval_resize: int | None = Field(None, ge=64)
    seeds: list[int] = Field(default_factory=lambda: list(DEFAULT_SEEDS), min_length=1)
    split_seed: int = Field(2026, ge=0)
    max_epochs: int = Field(20, ge=1, le=20)
    patience: int = Field(5, ge=1)
    batch_size: int = Field(64, ge=2)
    eval_batch_size: int = Field(128, ge=1)
    lr: float = Field(1e-4, gt=0.0)
    weight_decay: float = Field(1e-4, ge=0.0)
    scheduler: Literal["constant", "cosine"] = "constant"
    #: local state-dict file (e.g. torchvision IMAGENET1K_V2 saved offline); None = random
    #: initialisation from the optimisation seed.  Recorded in the model card either way.
    initial_weights: str | None = None
    device: Literal["auto", "cpu", "cuda"] = "auto"
    #: "auto": BF16 autocast on CUDA devices that support it, off otherwise (recorded)
    autocast: Literal["auto", "off"] = "auto"
    num_workers: int = Field(0, ge=0)
    #: CPU threads for torch (None: torch's default); recorded, since it can move results
    num_threads: int | None = Field(None, ge=1)
    #: keep each seed's last-epoch checkpoint (model + optimiser, ~3x the model) after it ends
    keep_last_checkpoint: bool = False

    @field_validator("seeds")
    @classmethod
    def _seeds(cls, v: list[int]) -> list[int]:
        if len(set(v)) != len(v):
            raise ValueError(f"seeds repeat a value: {v}")
        if any(s < 0 for s in v):
            raise ValueError(f"seeds must be non-negative integers; got {v}")
        return v

    @model_validator(mode="after")
    def _check(self) -> SupervisedSpec:
        names = [self.source.cohort] + [e.cohort for e in self.evaluation]
        if self.source.score_selection:
            names.append(self.selection_cohort)
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise ValueError(f"cohort names repeat: {dup}; each evaluation cohort needs its own "
                             f"name (the source's selection subset is {self.selection_cohort!r})")
        if self.resize < self.image_size:
            raise ValueError(f"eval_resize ({self.resize}) must be at least image_size "
                             f"({self.image_size}); the centre crop cannot exceed the image")
        return self

    @property
    def resize(self) -> int:
        """Evaluation resize of the shorter side (256 for 224-px crops)."""
        if self.eval_resize is not None:
            return self.eval_resize
        return int(self.image_size * 256 / 224 + 0.5)

    @property
    def selection_cohort(self) -> str:
        return f"{self.source.cohort}_selection"

    def model_name(self, *, retrained: bool) -> str:
        """``name`` alone, or ``<name>_original`` / ``<name>_retrained`` when an exclusion is given."""
        if self.exclusion is None and not retrained:
            return self.name
        return f"{self.name}_{'retrained' if retrained else 'original'}"


def load_supervised_spec(path: str | Path) -> tuple[SupervisedSpec, Path]:
    """Read and validate a YAML training spec; return it and its folder (for relative paths)."""
    from medaudit.io.specfile import load_yaml_model

    return load_yaml_model(path, SupervisedSpec, what="training spec")
