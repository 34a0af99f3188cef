"""Declared claims: the claims a user was given, written down in the spec and judged by their own cells.

A paper, a vendor or a regulator states claims such as "AUROC ≥ 0.85 on site 1", "A beats
B on AUROC", "calibrated: ECE ≤ 0.05 at 10 % prevalence" or "Se ≥ 0.90 and Sp ≥ 0.80 at
τ = 0.42".  The ``claims:`` section states them in a small vocabulary, each with its
evaluation specification E (model, prompt, cohort, negatives, π, τ, criterion) and the
changes of E to assess::

    claims:
      declared:
        - {kind: level, model: a, metric: roc_auc, at_least: 0.85, cohort: site-1}
        - {kind: comparison, model: a, than: b, metric: roc_auc, cohort: site-1}
        - {kind: operating_point, model: a, sensitivity_at_least: 0.9,
           specificity_at_least: 0.8, threshold: 0.42, cohort: site-1}
      generate: [rankings]   # generated claims: off by default once claims are declared

``kind`` may be left out where the keys say it (``at_least``/``at_most``: level; ``than``:
comparison; ``order``: ranking; ``sensitivity_at_least``/``specificity_at_least``:
operating point).  A list under ``claims:`` is read as ``declared``.

Kinds and verdicts (every interval at the run's level, percentile bootstrap with the
cohort's design, B of the run; the claim's own cell, never read from another block):

* ``level`` — ``metric ≥ at_least`` holds when the interval's lower end is at least the
  level, does not hold when its upper end is below; ``≤ at_most`` mirrored (ECE,
  Brier);
* ``comparison`` — ``model`` better than ``than`` on ``metric`` (the paired difference,
  direction from the metric: lower is better for errors and losses); with ``margin`` δ > 0
  a non-inferiority claim: holds when the difference's bound on the worse side is above
  −δ, does not hold when the whole interval is below −δ;
* ``operating_point`` — ``Se ≥ x`` and/or ``Sp ≥ y`` at a threshold τ that is a number,
  or chosen on a named source cohort by a rule (``threshold: {source, rule,
  target_value, design}``, the transport block's rules and designs), or, with no
  threshold, ``Se ≥ x at Sp ≥ y`` (sensitivity at the operating point where specificity
  reaches y).  The constraints are judged together as an intersection–union test:
  holds when every constraint's lower end meets its level, does not hold when any upper
  end is below;
* ``ranking`` — ``order: [a, b, c]`` on ``metric``: every adjacent pair's difference
  excludes 0 on the claimed side (holds), some pair's excludes it on the other
  (reversed), otherwise unresolved.

Changes (``changes:``; default every change that can affect the claim): another cohort
(named by the cohort's ``kind``: cohort, institution, task or finding), prompt, negative
class, prevalence (π-dependent metrics only: Brier, log loss, ECE; grid
``claims.prevalences``), threshold (a threshold chosen by a rule, chosen again on the
claim's cohort), reference standard (soft labels, for AUROC and AP: the soft metric with
its achievable ceiling, the value a scorer equal to the soft label reaches; a level above
the ceiling is "not attainable under this reference") and subgroup (each level of the
declared ``subgroups:`` columns, on that level's images).  A change a claim's criterion
cannot depend on gets no row.

Holding by construction.  A threshold chosen by a Se (Sp) rule on a cohort meets that
rule's rate on the same cohort because of how it was chosen: the rate is marked "by
construction" and left out of the verdict, and a claim with nothing else to judge has
the verdict "by construction", which the headline does not count as holding.  Only the
cases the rule was chosen on are bound by it: a subgroup of that cohort (and, for Sp, a
named negative group) is judged on its interval like any other change.

Cells.  One paired bootstrap per claim × change, keyed ``(claims, sha256 of what the
claim states, change, changed to)``: a claim's numbers depend on the run seed and on what
it states only -- not on its id, its wording, its cohort's name, or which other claims
are declared.  A small subgroup, or an interval that left replicates out (a class absent
from them), is reported but judged no further than "unresolved".  Multiplicity: each
claim is judged by its own interval at the run's level; no adjustment across claims or
changes (``multiplicity``).
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import math
import re
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, Literal

import numpy as np
import pandas as pd
from pydantic import Discriminator, Field, field_validator, model_validator

from medaudit.blocks import claimkit as ck
from medaudit.blocks.block import Block, BlockConfig, BlockResult, TableSchema
from medaudit.blocks.cells import BootstrapCell, run_cells
from medaudit.blocks.context import AuditContext, Resampling, Study, cell_rng
from medaudit.blocks.notes import constant_scores_note, degenerate_note, exposure_note, join
from medaudit.blocks.rows import spec_row
from medaudit.exceptions import DegenerateDataWarning, MedauditError, SchemaError
from medaudit.io.specfile import TAG_MARK, fraction, tag
from medaudit.stats import proportion_ci, threshold_transport
from medaudit.stats.metric_ids import depends_on_prevalence, higher_is_better, metric_range, metric_spec
from medaudit.stats.soft import soft_ceiling

__all__ = ["Claims", "claim_key", "ClaimsConfig", "LevelClaim", "ComparisonClaim", "OperatingPointClaim",
           "RankingClaim", "ThresholdFrom", "DeclaredClaim", "AXIS_NAMES", "GENERATE",
           "TransportCell", "run_transport"]

NAME = "claims"
#: the changes a declared claim may list under ``changes:`` (cohort kinds select those cohorts)
AXIS_NAMES = ("cohort", "institution", "task", "finding", "prompt", "negatives", "prevalence",
              "threshold", "reference", "subgroup")
#: ``claims.generate`` names -> the kinds of generated claims they switch on
GENERATE: dict[str, tuple[str, ...]] = {
    "rankings": ("ranking",),
    "reliability": ("reliability",),
    "thresholds": ("operating constraint",),
    "stability": ("stability",),
    "institutions": ("institution",),
    "coverage": ("coverage",),
    "estimators": ("estimator",),
}
#: kind of generated claim -> the letters of the ids its blocks give it (R01, Y02, L01, ...);
#: a declared id of that form is refused while the kind is generated (a test checks the
#: table against the ids an audit generates)
ID_LETTERS: dict[str, str] = {
    "ranking": "RY", "reliability": "L", "operating constraint": "T", "stability": "Y",
    "institution": "I", "coverage": "A", "estimator": "A",
}
#: soft form of an ordinary metric under a changed reference standard
_SOFT = {"roc_auc": "soft_roc_auc", "average_precision": "soft_average_precision"}
_WORDS = {"roc_auc": "AUROC", "average_precision": "AP", "brier_score": "Brier score",
          "log_loss": "log loss", "ece": "ECE", "aurc": "AURC", "pauc": "partial AUROC",
          "sensitivity": "Se", "specificity": "Sp", "sensitivity_at_specificity": "Se at Sp",
          "specificity_at_sensitivity": "Sp at Se"}
_RATE = {"sensitivity": "Se", "specificity": "Sp"}

Axis = Literal["cohort", "institution", "task", "finding", "prompt", "negatives", "prevalence",
               "threshold", "reference", "subgroup"]
Scalar = int | float | str


# ----------------------------------------------------------------------------- the vocabulary
class _Claim(BlockConfig):
    """What every declared claim states besides its kind: its name and E."""

    #: the claim's id in the matrix (default D01, D02, ... in declared order)
    id: str | None = None
    #: the claim as it was stated (default: written from its fields)
    text: str | None = None
    #: default: the primary prompt
    prompt: str | None = None
    #: default: the table's only cohort (required when it has several)
    cohort: str | None = None
    #: a named negative group of the cohort (``negative_group`` column), or all negatives
    negatives: str = "all"
    #: the changes of E to assess (default: every change that can affect the claim)
    changes: list[Axis] | None = None

    @field_validator("id", "text")
    @classmethod
    def _printable(cls, v: str | None, info: Any) -> str | None:
        # printed in the matrix, the page and figure names: as the table's names are checked.
        # A text's line breaks and tabs (YAML `text: >` ends in one) are spaces; empty is unset
        import re

        from medaudit.io.schema import CONTROL

        if v is None:
            return None
        if info.field_name == "text":
            v = " ".join(v.split())
        elif v != v.strip():
            raise ValueError(f"{v!r} has whitespace at either end; remove it")
        if not v:
            return None
        if m := re.search(CONTROL, v):
            raise ValueError(f"holds the control character U+{ord(m.group()):04X} (a line break, "
                             "tab or text-direction override); remove it")
        return v

    @model_validator(mode="before")
    @classmethod
    def _no_booleans(cls, v: Any) -> Any:
        # YAML reads `at_least: yes` as True, which a float field would take as 1.0
        if isinstance(v, Mapping):
            for key in _NUMBERS:
                if isinstance(v.get(key), bool):
                    raise ValueError(f"`{key}:` is a number; got {v[key]!r} (a yes/no value)")
        return v

    def models(self) -> list[str]:
        raise NotImplementedError


class _MetricClaim(_Claim):
    #: a metric id as the tables print it (``roc_auc``, ``ece[n_bins=10]``) or a name
    metric: str = "roc_auc"
    #: the metric's options (``{n_bins: 10}``); also writable inside the id
    options: dict[str, Scalar] = Field(default_factory=dict)
    #: the target prevalence of a π-dependent metric (Brier, log loss, ECE): "at π = 0.1"
    prevalence: float | None = None

    @model_validator(mode="after")
    def _metric(self) -> _MetricClaim:
        try:
            spec = metric_spec(self.metric, self.options)
        except MedauditError as e:
            raise ValueError(str(e)) from None
        if spec.name in _SOFT.values():
            # a claim states the ordinary metric; its soft-label form is what the reference
            # change judges (cells evaluate claims on hard labels: a soft metric there would be
            # the ordinary one under another name)
            plain = next(k for k, v in _SOFT.items() if v == spec.name)
            raise ValueError(f"metric {spec.name!r} is the soft-label form of {plain!r}: claim "
                             f"`metric: {plain}`, and with soft labels in the table (annotations: "
                             "or label_soft) the claim is also judged under them, as the change "
                             "'reference -> soft labels', with its achievable ceiling")
        if self.prevalence is not None:
            fraction(self.prevalence, "prevalence")
            if not depends_on_prevalence(spec.name):
                raise ValueError(f"metric {spec.id!r} does not depend on prevalence; remove "
                                 "`prevalence:` (only Brier, log loss and ECE take one)")
            if "prevalence" in spec.options:
                raise ValueError("give the prevalence once: in `prevalence:` or in the metric's "
                                 "options, not both")
        return self

    def spec(self, prevalence: float | None | str = "claim") -> Any:
        """The metric spec at the claim's prevalence (or at ``prevalence``; None: observed)."""
        pi = self.prevalence if prevalence == "claim" else prevalence
        base = metric_spec(self.metric, self.options)
        return base if pi is None else metric_spec(base.name, {**base.options, "prevalence": pi})


class LevelClaim(_MetricClaim):
    """``metric ≥ at_least`` (or ``≤ at_most``) for one model: "AUROC ≥ 0.85", "ECE ≤ 0.05 at π = 0.1"."""

    #: may be left out: `at_least` or `at_most` say it
    kind: Literal["level"] = "level"
    #: the model the claim is about
    model: str
    #: the claim: metric ≥ this level (AUROC, AP, Se, Sp, ...)
    at_least: float | None = None
    #: the claim: metric ≤ this level (ECE, Brier, log loss, ...)
    at_most: float | None = None

    @model_validator(mode="after")
    def _one_side(self) -> LevelClaim:
        if (self.at_least is None) == (self.at_most is None):
            raise ValueError("a level claim gives exactly one of `at_least:` and `at_most:`")
        for v in (self.at_least, self.at_most):
            if v is not None and not math.isfinite(float(v)):
                raise ValueError(f"the claimed level must be a finite number; got {v!r}")
        spec = metric_spec(self.metric, self.options)
        lo, hi = metric_range(spec.name)
        if not lo <= self.level <= hi:
            key = "at_least" if self.at_least is not None else "at_most"
            raise ValueError(f"`{key}: {self.level:g}` lies outside the values {spec.id} can take "
                             f"([{lo:g}, {hi:g}]); the claim could never be judged")
        return self

    def models(self) -> list[str]:
        return [self.model]

    @property
    def level(self) -> float:
        return float(self.at_least if self.at_least is not None else self.at_most)


class ComparisonClaim(_MetricClaim):
    """``model`` better than ``than`` on ``metric``; with ``margin`` > 0, non-inferior by that margin."""

    #: may be left out: `than` says it
    kind: Literal["comparison"] = "comparison"
    #: the model claimed better (or non-inferior)
    model: str
    #: the model it is compared with, on the same images
    than: str
    #: non-inferiority margin on the metric's scale (0: superiority)
    margin: float = Field(0.0, ge=0.0)

    @model_validator(mode="after")
    def _pair(self) -> ComparisonClaim:
        if self.model == self.than:
            raise ValueError(f"a comparison needs two models; `model:` and `than:` are both "
                             f"{self.model!r}")
        if higher_is_better(metric_spec(self.metric, self.options).name) is None:
            raise ValueError(f"metric {self.metric!r} has no better direction; compare a rate "
                             "or a score instead")
        if not math.isfinite(self.margin):
            raise ValueError("margin must be a finite number")
        lo, hi = metric_range(metric_spec(self.metric, self.options).name)
        if self.margin >= hi - lo:
            raise ValueError(f"margin {self.margin:g} is not below the range of {self.metric} "
                             f"([{lo:g}, {hi:g}]): every model would be non-inferior to every "
                             "other; give a margin on the metric's scale (e.g. 0.05)")
        return self

    def models(self) -> list[str]:
        return [self.model, self.than]


class RankingClaim(_MetricClaim):
    """``order: [a, b, c]`` ranks best first on ``metric``."""

    #: may be left out: `order` says it
    kind: Literal["ranking"] = "ranking"
    #: the models, best first
    order: list[str] = Field(min_length=2)

    @model_validator(mode="after")
    def _order(self) -> RankingClaim:
        if len(set(self.order)) != len(self.order):
            raise ValueError(f"a ranking names each model once; got {self.order}")
        if higher_is_better(metric_spec(self.metric, self.options).name) is None:
            raise ValueError(f"metric {self.metric!r} has no better direction to rank by")
        return self

    def models(self) -> list[str]:
        return list(self.order)


class ThresholdFrom(BlockConfig):
    """A threshold chosen on a named cohort by a rule (the transport block's rules and designs)."""

    #: the cohort the threshold is chosen on
    source: str
    #: how it is chosen: for a sensitivity or specificity (with `target_value`), or a cut-point
    rule: Literal["sensitivity", "specificity", "youden", "closest_topleft"]
    #: the Se or Sp the sensitivity / specificity rule aims at
    target_value: float | None = None
    #: ``reestimate``: the source is resampled and τ chosen again in every replicate
    #: (its sampling error enters the interval); ``fixed``: τ fixed at the source's estimate
    design: Literal["reestimate", "fixed"] = "reestimate"

    @model_validator(mode="after")
    def _target(self) -> ThresholdFrom:
        if self.rule in ("sensitivity", "specificity"):
            if self.target_value is None:
                raise ValueError(f"rule {self.rule!r} needs `target_value:` (the {self.rule} "
                                 "the threshold is chosen for)")
            fraction(self.target_value, "target_value")
        elif self.target_value is not None:
            raise ValueError(f"rule {self.rule!r} chooses its own cut-point; remove `target_value:`")
        return self


def _threshold_kind(v: Any) -> str:
    return TAG_MARK + ("rule" if isinstance(v, (Mapping, ThresholdFrom)) else "number")


#: a threshold is a number or a rule; the discriminator reports the errors of the one that
#: was written, not of both forms
Threshold = Annotated[Annotated[float, tag("number")] | Annotated[ThresholdFrom, tag("rule", ThresholdFrom)],
                      Discriminator(_threshold_kind)]


class OperatingPointClaim(_Claim):
    """``Se ≥ x`` and/or ``Sp ≥ y`` at a threshold, or ``Se ≥ x at Sp ≥ y``."""

    #: may be left out: `sensitivity_at_least` / `specificity_at_least` say it
    kind: Literal["operating_point"] = "operating_point"
    #: the model the claim is about
    model: str
    #: the claimed sensitivity at the threshold
    sensitivity_at_least: float | None = None
    #: the claimed specificity at the threshold (without a threshold: the Sp the Se is read at)
    specificity_at_least: float | None = None
    #: a number, a rule on a source cohort, or none ("Se ≥ x at Sp ≥ y")
    threshold: Threshold | None = None

    @model_validator(mode="after")
    def _rates(self) -> OperatingPointClaim:
        se, sp = self.sensitivity_at_least, self.specificity_at_least
        if se is None and sp is None:
            raise ValueError("an operating-point claim gives `sensitivity_at_least:`, "
                             "`specificity_at_least:` or both")
        for name, v in (("sensitivity_at_least", se), ("specificity_at_least", sp)):
            if v is not None:
                fraction(v, name)
        if self.threshold is None and (se is None or sp is None):
            raise ValueError("without `threshold:` the claim reads 'Se ≥ x at Sp ≥ y': give both "
                             "rates, or a threshold (a number or {source, rule, target_value})")
        if isinstance(self.threshold, float) and not math.isfinite(self.threshold):
            raise ValueError("threshold must be a finite number")
        return self

    def models(self) -> list[str]:
        return [self.model]

    def constraints(self) -> list[tuple[str, float]]:
        """(rate, level) of each constraint, Se first."""
        return [(r, float(v)) for r, v in (("sensitivity", self.sensitivity_at_least),
                                           ("specificity", self.specificity_at_least))
                if v is not None]


#: the numeric keys of a declared claim (refused as yes/no values)
_NUMBERS = ("at_least", "at_most", "margin", "prevalence", "threshold", "sensitivity_at_least",
            "specificity_at_least")

_KEYS = (("at_least", "level"), ("at_most", "level"), ("than", "comparison"), ("order", "ranking"),
         ("sensitivity_at_least", "operating_point"), ("specificity_at_least", "operating_point"))


def _kind(v: Any) -> str | None:
    """The kind of a declared claim (as its union tag): its ``kind``, else what its keys say."""
    if isinstance(v, _Claim):
        return TAG_MARK + v.kind  # type: ignore[attr-defined]
    if not isinstance(v, Mapping):
        return None
    if "kind" in v:
        return TAG_MARK + str(v["kind"]).replace(" ", "_").replace("-", "_")
    for key, kind in _KEYS:
        if key in v:
            return TAG_MARK + kind
    return None


DeclaredClaim = Annotated[Annotated[LevelClaim, tag("level", LevelClaim)]
                          | Annotated[ComparisonClaim, tag("comparison", ComparisonClaim)]
                          | Annotated[OperatingPointClaim, tag("operating_point", OperatingPointClaim)]
                          | Annotated[RankingClaim, tag("ranking", RankingClaim)],
                          Discriminator(_kind, custom_error_type="claim_kind",
                                        custom_error_message="a declared claim needs `kind:` "
                                        "(level, comparison, operating_point or ranking) or the "
                                        "keys of one (at_least, than, order, sensitivity_at_least)")]


#: keys only a declared claim has (a `claims:` mapping holding them is one claim, unlisted)
_CLAIM_KEYS = frozenset({"model", "than", "metric", "order", "at_least", "at_most", "margin",
                         "sensitivity_at_least", "specificity_at_least", "threshold", "kind"})


class ClaimsConfig(BlockConfig):
    """The ``claims:`` section: declared claims, which generated claims to state, their levels."""

    #: level of the generated reliability claims "AUROC ≥ level" (None: none)
    auroc_at_least: float | None = 0.90
    #: the generated claims to state: rankings, reliability, thresholds, stability,
    #: institutions, coverage, estimators, or all / none (default: all when no claim is
    #: declared, none when some are)
    generate: list[Literal["all", "none", "rankings", "reliability", "thresholds", "stability",
                           "institutions", "coverage", "estimators"]] | None = None
    #: the claims to judge, in the order the matrix shows them (first)
    declared: list[DeclaredClaim] = Field(default_factory=list)
    #: the prevalence grid of the π change of π-dependent declared claims
    prevalences: list[float] = Field(default_factory=list)
    #: subgroup levels with fewer images are qualified "small group"
    min_group_size: int = Field(30, ge=1)

    @model_validator(mode="before")
    @classmethod
    def _list_form(cls, v: Any) -> Any:
        if v is None:  # `claims:` with nothing under it
            return {}
        if isinstance(v, list):
            v = {"declared": v}
        if not isinstance(v, Mapping):
            raise ValueError(f"`claims:` is a list of claims, or a mapping with `declared:` (that "
                             f"list) and `generate:`; got {type(v).__name__} {str(v)[:40]!r}")
        if isinstance(v.get("declared"), Mapping):
            raise ValueError("`declared:` is a list of claims, one entry per claim (each line "
                             "starting with '- '); got a mapping")
        own = _CLAIM_KEYS.intersection(v).difference(cls.model_fields)
        if own:
            # one claim written as the section itself (claims={"model": ..., ...} in Python)
            raise ValueError(f"`claims:` holds the keys of one claim ({', '.join(sorted(own))}); "
                             "a claim goes in a list: `claims: [{model: ..., metric: ..., "
                             "at_least: ...}]` (claims=[{...}] in Python), or under `declared:`")
        for i, d in enumerate(v.get("declared") or []):
            if isinstance(d, Mapping) and _kind(d) is None:
                # no key says which claim it is: a misspelt one (at_leest) is the likely cause
                close = {k: difflib.get_close_matches(str(k), [key for key, _ in _KEYS], n=1)
                         for k in d if k not in _CLAIM_KEYS}
                hints = [f"{k!r} -> {m[0]!r}" for k, m in close.items() if m]
                if hints:
                    raise ValueError(f"declared claim {i + 1} has no key saying what it claims; "
                                     f"did you mean {', '.join(hints)}?")
        return v

    @field_validator("generate", mode="before")
    @classmethod
    def _one_name(cls, v: Any) -> Any:
        # `generate: all` (or one kind) is the list of that one name, as the docs write it
        return [v] if isinstance(v, str) else v

    @field_validator("auroc_at_least")
    @classmethod
    def _lvl(cls, v: float | None) -> float | None:
        return None if v is None else fraction(v, "auroc_at_least")

    @field_validator("prevalences")
    @classmethod
    def _grid(cls, v: list[float]) -> list[float]:
        for p in v:
            fraction(p, "prevalences value")
        if len(set(v)) != len(v):
            raise ValueError(f"prevalences repeat a value: {v}")
        return v

    @model_validator(mode="after")
    def _ids(self) -> ClaimsConfig:
        named = [c.model_copy(update={"id": c.id or f"D{i:02d}"})
                 for i, c in enumerate(self.declared, start=1)]
        ids = [c.id for c in named]
        dup = sorted({i for i in ids if ids.count(i) > 1})
        if dup:
            raise ValueError(f"declared claim ids repeat: {dup}; give each claim its own `id:`")
        object.__setattr__(self, "declared", named)
        if self.generate and len(self.generate) > 1 and ({"all", "none"} & set(self.generate)):
            raise ValueError("`generate:` lists `all` or `none` alone")
        kinds = self.generated_kinds()
        letters = "".join(sorted({c for k, v in ID_LETTERS.items()
                                  if kinds is None or k in kinds for c in v}))
        if letters:
            # a generated claim's id is its kind's letter and a number (R01, L02, T01):
            # refused here, at the door, rather than after every block has run (audit.claims
            # checks the ids the run actually generated as well)
            # (the number as f"{n:02d}" writes it: R01..R99, R100, never R001)
            taken = [i for i in ids if re.fullmatch(rf"[{letters}](0[1-9]|[1-9]\d+)", i)]
            if taken:
                raise ValueError(f"declared claim id {taken[0]!r} has the form of the ids of the "
                                 f"generated claims (a letter of {list(letters)} and a number), "
                                 "which claims.generate is on to produce; give the declared claim "
                                 "another `id:`, or leave that kind out of `generate:`")
        return self

    def generated_kinds(self) -> frozenset[str] | None:
        """The kinds of generated claims to keep (None: every kind)."""
        gen = self.generate
        if gen is None:
            return frozenset() if self.declared else None
        if "all" in gen:
            return None
        return frozenset(k for g in gen if g != "none" for k in GENERATE[g])


# ----------------------------------------------------------------------------- cells
@dataclass(frozen=True, eq=False)
class TransportCell:
    """One threshold chosen on a source and carried to a target (an operating-point claim)."""

    key: tuple[Any, ...]
    y_source: np.ndarray
    s_source: np.ndarray
    y_target: np.ndarray
    s_target: np.ndarray
    rule: str
    target_value: float | None
    design: str


def run_transport(cell: TransportCell, resampling: Resampling) -> Any:
    """The cell's :func:`~medaudit.stats.threshold_transport`, drawn from its own key."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DegenerateDataWarning)
        return threshold_transport(cell.y_source, cell.s_source, cell.y_target, cell.s_target,
                                   rule=cell.rule, target_value=cell.target_value,
                                   design=cell.design, n_resamples=resampling.n_resamples,
                                   confidence_level=resampling.confidence_level,
                                   rng=cell_rng(resampling.seed, *cell.key))


@dataclass(frozen=True)
class _Eval:
    """One matrix cell of a claim: the change, and the data it is judged on."""

    change: str
    changed_to: str
    cohort: str
    prompt: str
    negatives: str = "all"
    prevalence: float | None | str = "claim"
    subgroup: tuple[str, str] | None = None
    soft: bool = False
    #: an operating-point claim's threshold is chosen on this cohort (None: the claim's source)
    threshold_on: str | None = None
    #: why a change the claim asks for cannot be made here ('' : it can)
    reason: str = ""


# ----------------------------------------------------------------------------- the block
class Claims(Block):
    name = NAME
    title = "Declared claims"
    summary = ("the claims you were given (level, comparison, operating point, ranking), each "
               "judged at its E and under every change of E that can affect it")
    config = ClaimsConfig
    tables = (TableSchema("claims", "one row per declared claim × change of E: its estimate, "
                          "interval and verdict from the claim's own bootstrap cell",
                          ("claim_id", "claim", "kind", "change", "changed_to", "estimate",
                           "ci_low", "ci_high", "verdict", "qualification")),)
    claim_kinds = ("level", "comparison", "operating point", "ranking")

    def enabled(self, config: ClaimsConfig) -> bool:
        return bool(config.declared)

    def multiplicity(self, config: ClaimsConfig) -> str | None:
        if not config.declared:
            return None
        return ("declared claims: each judged by its own interval at the run's level; no "
                "adjustment across claims or changes")

    def provenance(self, ctx: AuditContext, config: ClaimsConfig) -> dict[str, Any]:
        return {"declared": len(config.declared),
                "cells": "one paired bootstrap per claim × change, key (claims, sha256 of what "
                         "the claim states, change, changed to)"}

    def check(self, config: ClaimsConfig, table: pd.DataFrame, cohorts: Sequence[str]) -> list[str]:
        from medaudit.blocks.checks import unknown

        models = sorted(table["model"].unique())
        prompts = sorted(table["prompt"].unique())
        score = pd.to_numeric(table["score"], errors="coerce")
        probabilities = bool(len(score)) and bool(((score >= 0) & (score <= 1)).all())
        errs: list[str] = []
        for i, c in enumerate(config.declared):
            where = f"claims.declared[{i}] ({c.id})"
            errs += unknown("model", c.models(), models, where)
            if c.cohort is None and len(cohorts) > 1:
                errs.append(f"  - {where}: name the claim's `cohort:`; the spec has "
                            f"{len(cohorts)} cohorts {sorted(cohorts)}")
            if c.cohort is not None:
                errs += unknown("cohort", [c.cohort], cohorts, where)
            if c.prompt is not None:
                errs += unknown("prompt", [c.prompt], prompts, where)
            if isinstance(c, OperatingPointClaim) and isinstance(c.threshold, ThresholdFrom):
                errs += unknown("cohort", [c.threshold.source], cohorts, f"{where} threshold.source")
            if c.negatives != "all":
                groups = sorted({str(g) for g in table.get("negative_group", pd.Series(dtype=object))
                                 if isinstance(g, str) and g})
                if not groups:
                    errs.append(f"  - {where}: `negatives: {c.negatives}` names a negative group, "
                                "but the table has no `negative_group` column; remove it (all "
                                "negatives) or add the column")
                else:
                    errs += unknown("negative group", [c.negatives], groups, f"{where} negatives")
            if isinstance(c, OperatingPointClaim) and isinstance(c.threshold, (int, float)) \
                    and probabilities and not 0.0 <= c.threshold <= 1.0:
                # on probabilities such a τ calls every image one class: a slip of scale
                # (a threshold on logits), not a claim; a τ outside this table's range but
                # on the scale is judged (a site whose scores all lie above it, say)
                errs.append(f"  - {where}: threshold {c.threshold:g} lies outside [0, 1], but the "
                            "scores are probabilities: every image would be called "
                            f"{'negative' if c.threshold > 1 else 'positive'}; give the threshold "
                            "as a probability (or declare `score_scale: logits`)")
        return errs

    def run(self, ctx: AuditContext, config: ClaimsConfig) -> BlockResult:
        rows: list[dict[str, Any]] = []
        notes: list[str] = []
        for claim in config.declared:
            ctx.tick(f"{NAME}: {claim.id}")
            rows += _claim_rows(ctx, claim, config)
        if not config.declared:
            return BlockResult(name=NAME, tables={}, notes=("No claims are declared.",))
        notes.append(f"Intervals: percentile, level {ctx.resampling.confidence_level}, "
                     f"B = {ctx.resampling.n_resamples}; one paired bootstrap per claim × change "
                     "with the cohort's design; each claim judged by its own interval (no "
                     "adjustment across claims).  A claim's draw is keyed by what it states, "
                     "not shared with the other blocks, so its interval can differ from the "
                     "same metric's interval in another table by Monte-Carlo error (both are "
                     "percentile intervals of B replicates; a larger B narrows the gap).")
        notes.append("Operating-point claims with two constraints are judged together: they hold "
                     "when both lower ends meet their levels (an intersection–union test).")
        return BlockResult(name=NAME, tables={"claims": pd.DataFrame(rows)}, notes=tuple(notes))

    def claims(self, results: Mapping[str, BlockResult], study: Study, config: ClaimsConfig
               ) -> list[dict[str, Any]]:
        t = ck.table(results, NAME, "claims")
        if t.empty:
            return []
        out = []
        for r in t.to_dict("records"):
            out.append({**{c: r.get(c) for c in ck.CLAIM_COLUMNS if c in r}, "origin": "declared",
                        "source_table": f"{NAME}.claims"})
        return out


# ----------------------------------------------------------------------------- evaluations
def _default_cohort(ctx: AuditContext, claim: _Claim) -> str:
    if claim.cohort is not None:
        return claim.cohort
    if len(ctx.cohorts) == 1:
        return ctx.cohorts[0]
    raise SchemaError(f"claim {claim.id}: name its `cohort:`; the audit has cohorts {ctx.cohorts}")


def _applies(axis: str, claim: _Claim) -> bool:
    return claim.changes is None or axis in claim.changes or (
        axis in ck.COHORT_KINDS and "cohort" in claim.changes)


def _has(ctx: AuditContext, cohort: str, models: list[str], prompt: str) -> bool:
    sub = ctx.scores[(ctx.scores["cohort"] == cohort) & (ctx.scores["prompt"] == prompt)]
    return set(models) <= set(sub["model"].unique())


def _evaluations(ctx: AuditContext, claim: _Claim, config: ClaimsConfig) -> list[_Eval]:
    cohort = _default_cohort(ctx, claim)
    prompt = claim.prompt or ctx.primary_prompt
    models = claim.models()
    at_e = _Eval("at E", "", cohort, prompt, claim.negatives)
    out = [at_e]
    for other in ctx.cohorts:
        axis = ck.cohort_axis(ctx.study, other)
        if other != cohort and _applies(axis, claim):
            out.append(dataclasses.replace(at_e, change=axis, changed_to=other, cohort=other))
    if _applies("prompt", claim):
        sub = ctx.scores[ctx.scores["cohort"] == cohort]
        for p in ctx.prompts():
            if p != prompt and p in set(sub["prompt"]) and _has(ctx, cohort, models, p):
                out.append(dataclasses.replace(at_e, change="prompt", changed_to=p, prompt=p))
    if _applies("negatives", claim):
        sub = ctx.scores[(ctx.scores["cohort"] == cohort) & (ctx.scores["label"] == 0)]
        groups = sorted({str(g) for g in sub.get("negative_group", pd.Series(dtype=object))
                         if isinstance(g, str) and g})
        if len(groups) >= 2:
            for g in ["all", *groups]:
                if g != claim.negatives:
                    out.append(dataclasses.replace(at_e, change="negatives", changed_to=g,
                                                   negatives=g))
    if isinstance(claim, _MetricClaim) and _applies("prevalence", claim) and \
            depends_on_prevalence(metric_spec(claim.metric, claim.options).name):
        grid: list[float | None] = [None, *config.prevalences]
        for pi in grid:
            if pi != claim.prevalence:
                out.append(dataclasses.replace(at_e, change="prevalence",
                                               changed_to="observed" if pi is None else f"π={pi:g}",
                                               prevalence=pi))
    if isinstance(claim, OperatingPointClaim) and isinstance(claim.threshold, ThresholdFrom) \
            and claim.threshold.source != cohort and _applies("threshold", claim):
        out.append(dataclasses.replace(at_e, change="threshold", changed_to=f"chosen on {cohort}",
                                       threshold_on=cohort))
    if isinstance(claim, _MetricClaim) and _applies("reference", claim) and \
            metric_spec(claim.metric, claim.options).name in _SOFT and \
            "label_soft" in ctx.scores.columns and \
            ctx.scores.loc[ctx.scores["cohort"] == cohort, "label_soft"].notna().any():
        out.append(dataclasses.replace(at_e, change="reference", changed_to="soft labels", soft=True))
    if _applies("subgroup", claim):
        for col in ctx.study.subgroups:
            for level in _levels(ctx, cohort, col):
                out.append(dataclasses.replace(at_e, change="subgroup", changed_to=f"{col} = {level}",
                                               subgroup=(col, level)))
    # a change the claim asks for by name that this audit cannot make is said, not dropped:
    # a claim that looks robust only because nothing was changed would mislead
    made = {ev.change for ev in out}
    for axis in dict.fromkeys(claim.changes or ()):
        kinds = set(ck.COHORT_KINDS) if axis == "cohort" else {axis}
        if not made & kinds:
            out.append(dataclasses.replace(at_e, change=axis, changed_to="",
                                           reason=_cannot(ctx, claim, axis)))
    return out


def _cannot(ctx: AuditContext, claim: _Claim, axis: str) -> str:
    """Why ``axis``, asked for in the claim's ``changes:``, cannot be changed in this audit."""
    is_metric = isinstance(claim, _MetricClaim)
    name = metric_spec(claim.metric, claim.options).name if is_metric else ""  # type: ignore
    reasons = {
        "prompt": "the claim's models have no other prompt on its cohort",
        "negatives": "its cohort has fewer than two named negative groups (`negative_group`)",
        "prevalence": (f"{name or 'an operating point'} does not depend on prevalence"
                       if not (is_metric and depends_on_prevalence(name)) else
                       "no other prevalence: list target values in `claims.prevalences`"),
        "threshold": "the claim's threshold is not chosen on another cohort",
        "reference": ("no soft labels (`label_soft`) on its cohort" if is_metric and name in _SOFT
                      else "the metric has no soft-label form (AUROC and AP have)"),
        "subgroup": "no subgroup columns are declared (`subgroups:`)",
    }
    if axis in ck.COHORT_KINDS or axis == "cohort":
        if len(ctx.cohorts) == 1:
            return "the audit has one cohort"
        return f"the audit has no other cohort of kind {axis}"
    return reasons.get(axis, f"{axis} cannot be changed in this audit")


def _levels(ctx: AuditContext, cohort: str, column: str) -> list[str]:
    from medaudit.blocks.subgroups import MISSING, levels_of

    sub = ctx.scores[ctx.scores["cohort"] == cohort].drop_duplicates("image_id")
    if column not in sub.columns:
        return []
    vals = levels_of(sub, column)
    return sorted(set(vals) - {MISSING}) + ([MISSING] if MISSING in set(vals) else [])


def _mask(ctx: AuditContext, w: Any, ev: _Eval) -> np.ndarray:
    keep = np.ones(w.label.size, dtype=bool)
    if ev.negatives != "all":
        keep &= (w.label == 1) | (w.negative_group == ev.negatives)
    if ev.subgroup is not None:
        from medaudit.blocks.subgroups import levels_of

        sub = ctx.scores[ctx.scores["cohort"] == ev.cohort].drop_duplicates("image_id")
        lv = pd.Series(levels_of(sub, ev.subgroup[0]), index=sub["image_id"].to_numpy())
        keep &= lv.reindex(w.image_id).to_numpy(dtype=object) == ev.subgroup[1]
    return keep


# ----------------------------------------------------------------------------- rows
def _text(claim: _Claim) -> str:
    if claim.text:
        return claim.text
    if isinstance(claim, OperatingPointClaim):
        rates = " and ".join(f"{_RATE[r]} ≥ {v:g}" for r, v in claim.constraints())
        t = claim.threshold
        if t is None:
            return f"{claim.model}: Se ≥ {claim.sensitivity_at_least:g} at Sp ≥ " \
                   f"{claim.specificity_at_least:g}"
        if isinstance(t, ThresholdFrom):
            rule = t.rule + (f" ≥ {t.target_value:g}" if t.target_value is not None else "")
            return f"{claim.model}: {rates} at τ chosen on {t.source} by {rule}"
        return f"{claim.model}: {rates} at τ = {t:g}"
    spec = claim.spec()
    words = _WORDS.get(spec.name)
    if words is None:  # no word for it: the id, which states its options
        words = spec.id
    elif spec.options:
        words = f"{words} [{', '.join(f'{k}={v}' for k, v in sorted(spec.options.items()))}]"
    if isinstance(claim, LevelClaim):
        op = "≥" if claim.at_least is not None else "≤"
        return f"{claim.model}: {words} {op} {claim.level:g}"
    if isinstance(claim, ComparisonClaim):
        if claim.margin > 0:
            return f"{claim.model} is non-inferior to {claim.than} on {words} (margin {claim.margin:g})"
        return f"{claim.model} is better than {claim.than} on {words}"
    assert isinstance(claim, RankingClaim)
    return f"{' > '.join(claim.order)} on {words}"


def _base(claim: _Claim, ev: _Eval, ctx: AuditContext) -> dict[str, Any]:
    model = claim.model if isinstance(claim, (LevelClaim, OperatingPointClaim)) else (
        f"{claim.model} vs {claim.than}" if isinstance(claim, ComparisonClaim)
        else " > ".join(claim.order))  # type: ignore[union-attr]
    if isinstance(claim, _MetricClaim):
        pi = claim.prevalence if ev.prevalence == "claim" else ev.prevalence
        prevalence: Any = "observed" if pi is None else pi
        crit = claim.spec(ev.prevalence).id
        if isinstance(claim, (ComparisonClaim, RankingClaim)):
            crit = f"{crit}_difference"
    else:
        prevalence, crit = "observed", "+".join(r for r, _ in claim.constraints())  # type: ignore
    if ev.soft:
        crit = "soft_" + crit
    return {"claim_id": claim.id, "claim": _text(claim),
            "kind": claim.kind.replace("_", " "),  # type: ignore[attr-defined]
            "change": ev.change, "changed_to": ev.changed_to, "model": model, "prompt": ev.prompt,
            "cohort": ev.cohort, "negatives": ev.negatives, "prevalence": prevalence,
            "threshold": None, "criterion": crit,
            "subgroup": "" if ev.subgroup is None else ev.subgroup[0],
            "group": "" if ev.subgroup is None else ev.subgroup[1]}


def _row(base: dict[str, Any], *, verdict: str, note: str = "", design: str | None = None,
         n_resamples: int | None = None, estimate: float = math.nan,
         ci_low: float = math.nan, ci_high: float = math.nan, **values: Any) -> dict[str, Any]:
    e = {k: base.pop(k) for k in ("model", "prompt", "cohort", "negatives", "prevalence",
                                  "threshold", "criterion")}
    e.update({k: values.pop(k) for k in ("threshold", "criterion") if k in values})
    return spec_row(**e, design=design, n_resamples=n_resamples, **base,
                    estimate=estimate, ci_low=ci_low, ci_high=ci_high,
                    ceiling=values.pop("ceiling", math.nan), verdict=verdict,
                    other_criterion=values.pop("other_criterion", None),
                    other_estimate=values.pop("other_estimate", math.nan),
                    other_ci_low=values.pop("other_ci_low", math.nan),
                    other_ci_high=values.pop("other_ci_high", math.nan),
                    n=values.pop("n", None), n_pos=values.pop("n_pos", None),
                    n_neg=values.pop("n_neg", None), n_degenerate=values.pop("n_degenerate", 0),
                    qualification=note, **values)


def _claim_rows(ctx: AuditContext, claim: _Claim, config: ClaimsConfig) -> list[dict[str, Any]]:
    evals = _evaluations(ctx, claim, config)
    prepared: list[tuple[_Eval, Any]] = []
    for ev in evals:
        prepared.append((ev, _prepare(ctx, claim, ev, config)))
    boot = [(i, p) for i, (_, p) in enumerate(prepared) if isinstance(p, BootstrapCell)]
    trans = [(i, p) for i, (_, p) in enumerate(prepared) if isinstance(p, TransportCell)]
    results: dict[int, Any] = {}
    for (i, _), r in zip(boot, run_cells(ctx, [p for _, p in boot]), strict=True):
        results[i] = r
    tr = ctx.map(functools.partial(run_transport, resampling=ctx.resampling), [p for _, p in trans])
    for (i, _), r in zip(trans, tr, strict=True):
        results[i] = r
    rows = []
    for i, (ev, p) in enumerate(prepared):
        base = _base(claim, ev, ctx)
        if isinstance(p, str):  # a reason the change cannot be judged
            verdict = "not defined" if p.startswith("metric undefined") else "not assessed"
            rows.append(_row(base, verdict=verdict, note=p))
            continue
        rows.append(_judge(ctx, claim, ev, p, results[i], base, config))
    return rows


def _prepare(ctx: AuditContext, claim: _Claim, ev: _Eval, config: ClaimsConfig
             ) -> BootstrapCell | TransportCell | str:
    """The cell that judges ``claim`` under ``ev``, or the reason it cannot be judged."""
    if ev.reason:
        return ev.reason
    models = claim.models()
    if not _has(ctx, ev.cohort, models, ev.prompt):
        missing = [m for m in models if not _has(ctx, ev.cohort, [m], ev.prompt)]
        return f"no scores of {', '.join(missing)} on {ev.cohort} at prompt {ev.prompt}"
    try:
        w = ctx.wide(ev.cohort, keys=[(m, ev.prompt) for m in models])
    except SchemaError as e:
        # the message lists its mismatches one per line: a reason is one line, so joined
        head, *items = str(e).splitlines() or [""]
        return " ".join(p for p in (f"not paired: {head}",
                                    "; ".join(line.strip(" -") for line in items)) if p)
    keep = _mask(ctx, w, ev)
    y = w.label[keep]
    n_pos, n_neg = int((y == 1).sum()), int((y == 0).sum())
    if n_pos == 0 or n_neg == 0:
        return f"metric undefined: no {'positives' if n_pos == 0 else 'negatives'} in this stratum"
    scores = {m: w.scores[f"{m}|{ev.prompt}"][keep] for m in models}
    key = (NAME, claim_key(claim), ev.change, ev.changed_to)
    design = ctx.cohort_design(ev.cohort)
    if isinstance(claim, OperatingPointClaim):
        t = claim.threshold
        if isinstance(t, ThresholdFrom):
            source = ev.threshold_on or t.source
            if source == ev.cohort and ev.negatives == "all" and ev.subgroup is None:
                ys, ss = y, scores[claim.model]
            else:
                if not _has(ctx, source, [claim.model], ev.prompt):
                    return f"no scores of {claim.model} on the threshold's source {source}"
                ws = ctx.wide(source, keys=[(claim.model, ev.prompt)])
                ys, ss = ws.label, ws.scores[f"{claim.model}|{ev.prompt}"]
            # on its own source the threshold is fixed at the source's estimate: resampling
            # the same images twice, as source and as target, would not be two samples
            dsg = "fixed" if source == ev.cohort else t.design
            return TransportCell(key=key, y_source=ys, s_source=ss, y_target=y,
                                 s_target=scores[claim.model], rule=t.rule,
                                 target_value=t.target_value, design=dsg)
        if t is None:
            metrics: tuple[Any, ...] = (("sensitivity_at_specificity",
                                         {"min_specificity": float(claim.specificity_at_least)}),)
        else:
            metrics = tuple((r, {"threshold": float(t)}) for r, _ in claim.constraints())
        return BootstrapCell(key=key, label=y, scores=scores, metrics=metrics, design=design)
    assert isinstance(claim, _MetricClaim)
    spec = claim.spec(ev.prevalence)
    if spec.name in ("brier_score", "log_loss", "ece", "aurc", "selective_risk") and \
            not ctx.probabilities:
        return f"{spec.name} needs probabilities; the scores are {ctx.study.score_scale}"
    pairs = _pairs(claim)
    if ev.soft:
        soft = w.label_soft[keep] if w.label_soft is not None else None
        if soft is None or not np.isfinite(soft).all():
            return "no soft labels for every image of this stratum"
        return BootstrapCell(key=key, label=y, scores=scores, metrics=(), design=design,
                             contrasts=pairs, label_soft=soft, soft_metrics=(_SOFT[spec.name],))
    return BootstrapCell(key=key, label=y, scores=scores, metrics=((spec.name, dict(spec.options)),),
                         design=design, contrasts=pairs)


def claim_key(claim: _Claim) -> str:
    """What a claim states, hashed: the key part of its cells, so that its interval depends
    on the claim and the run seed only -- not on its id, its wording, the name of its
    cohort or the other claims.

    A cell of the claim under a change is keyed ``("claims", claim_key(claim), change,
    changed_to)`` (:func:`~medaudit.blocks.context.cell_rng`).
    """
    import hashlib
    import json

    # the cohort is where the claim is judged, not what it states: a renamed cohort (a site
    # called otherwise) keeps its draws
    stated = claim.model_dump(mode="json", exclude={"id", "text", "changes", "cohort"})
    text = json.dumps(stated, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def _pairs(claim: _Claim) -> tuple[tuple[str, str], ...]:
    if isinstance(claim, ComparisonClaim):
        return ((claim.model, claim.than),)
    if isinstance(claim, RankingClaim):
        return tuple(zip(claim.order[:-1], claim.order[1:], strict=True))
    return ()


def _judge(ctx: AuditContext, claim: _Claim, ev: _Eval, cell: Any, res: Any,
           base: dict[str, Any], config: ClaimsConfig) -> dict[str, Any]:
    small = None
    if ev.subgroup is not None:
        n = int(cell.label.size if isinstance(cell, BootstrapCell) else cell.y_target.size)
        if n < config.min_group_size:
            small = n
    row = _judge_cell(ctx, claim, ev, cell, res, base, small, config.min_group_size)
    row["verdict"], row["qualification"] = ck.verdict_untrusted(
        row["verdict"], row["qualification"], small=small is not None,
        n_degenerate=row.get("n_degenerate"), n_resamples=row.get("n_resamples"))
    if isinstance(claim, LevelClaim):
        row["verdict"], row["qualification"] = ck.verdict_at_bound(
            row["verdict"], row["qualification"], criterion=row.get("criterion"),
            side=row.get("claim_side"), level=row.get("claim_value"), ci_low=row.get("ci_low"),
            ci_high=row.get("ci_high"), n_pos=row.get("n_pos"), n_neg=row.get("n_neg"),
            confidence_level=ctx.resampling.confidence_level)
    return row


def _judge_cell(ctx: AuditContext, claim: _Claim, ev: _Eval, cell: Any, res: Any,
                base: dict[str, Any], small: int | None, min_group_size: int) -> dict[str, Any]:
    B = ctx.resampling.n_resamples
    notes = [exposure_note(ctx, claim.models(), ev.cohort)]
    if small is not None:
        notes.append(f"small group (n={small} < {min_group_size})")
    if isinstance(claim, OperatingPointClaim):
        return _judge_operating_point(claim, ev, cell, res, base, notes, B)
    assert isinstance(claim, _MetricClaim)
    spec = claim.spec(ev.prevalence)
    mid = _SOFT[spec.name] if ev.soft else spec.id
    # a model that scores every image of this stratum alike ranks none above another: said
    # on the claim's cell, as on the discrimination, subgroups and spectrum rows
    if not ev.soft:
        notes += [f"{m}: {note}" if len(cell.scores) > 1 else note
                  for m, s in cell.scores.items() if (note := constant_scores_note(s, spec.name))]
    if isinstance(claim, LevelClaim):
        r = res.marginal[(claim.model, mid)]
        est, lo, hi = r.estimate, r.ci_low, r.ci_high
        v = (ck.verdict_level(est, lo, hi, claim.level) if claim.at_least is not None
             else ck.verdict_at_most(est, lo, hi, claim.level))
        ceiling = math.nan
        if ev.soft:
            ceiling = soft_ceiling(cell.label_soft, metric=_SOFT[spec.name])
            if claim.at_least is not None:
                v = ck.verdict_ceiling(v, ceiling, claim.level)
            notes.append(f"achievable ceiling under soft labels {ceiling:.3f} (a scorer equal to "
                         "the soft label)" + (f" is below the claimed {claim.level:g}"
                                              if ceiling < claim.level else ""))
        notes.append(degenerate_note(r.n_degenerate, r.n_resamples))
        return _row(base, verdict=v, note=join(*notes), design=r.design, n_resamples=r.n_resamples,
                    estimate=est, ci_low=lo, ci_high=hi, ceiling=ceiling, n=r.n,
                    n_pos=r.n_pos, n_neg=r.n_neg, n_degenerate=r.n_degenerate,
                    claim_value=claim.level,
                    claim_side="greater" if claim.at_least is not None else "less")
    sign = 1.0 if higher_is_better(spec.name) else -1.0
    margin = claim.margin if isinstance(claim, ComparisonClaim) else 0.0
    judged = []
    for a, b in _pairs(claim):
        d = res.differences[(a, b, mid)]
        judged.append((a, b, d, _verdict_difference(d.estimate, d.ci_low, d.ci_high, sign, margin)))
    if isinstance(claim, ComparisonClaim):
        a, b, d, v = judged[0]
        if margin > 0:
            notes.append(f"non-inferiority margin {margin:g} on the {spec.id} scale")
    else:
        v = _combine([x[3] for x in judged])
        # the pair with the weakest support is the one shown; every pair in the qualification
        a, b, d, _ = min(judged, key=_support(sign))
        notes.append("; ".join(f"{x[0]} - {x[1]} = {x[2].estimate:.3f} [{x[2].ci_low:.3f}, "
                               f"{x[2].ci_high:.3f}] {x[3]}" for x in judged))
    notes.append("lower is better" if sign < 0 else "")
    notes.append(degenerate_note(d.n_degenerate, d.n_resamples))
    return _row(base, verdict=v, note=join(*notes), design=d.design, n_resamples=d.n_resamples,
                estimate=d.estimate, ci_low=d.ci_low, ci_high=d.ci_high,
                model_a=a, model_b=b, n=d.n, n_pos=d.n_pos, n_neg=d.n_neg,
                n_degenerate=d.n_degenerate, claim_value=-sign * margin + 0.0,
                claim_side="greater" if sign > 0 else "less")


def _support(sign: float):
    """Sort key of a ranking's pairs: the claimed-side lower bound (weakest first)."""
    def key(x: tuple[str, str, Any, str]) -> float:
        lo, hi = x[2].ci_low, x[2].ci_high
        if not (math.isfinite(lo) and math.isfinite(hi)):
            return -math.inf
        return min(sign * lo, sign * hi)
    return key


def _verdict_difference(est: float, lo: float, hi: float, sign: float, margin: float) -> str:
    """``sign * (A - B) > -margin`` judged from the interval (superiority when margin is 0)."""
    if any(not math.isfinite(x) for x in (est, lo, hi)):
        return "not defined"
    lo_s, hi_s = sorted((sign * lo, sign * hi))
    if lo_s > -margin:
        return "holds"
    if margin > 0:
        return "does not hold" if hi_s < -margin else "unresolved"
    return "reversed" if hi_s < 0 else "unresolved"


def _combine(verdicts: Sequence[str]) -> str:
    """Every part holds -> holds; any undefined -> not defined; any reversed -> reversed."""
    if "not defined" in verdicts:
        return "not defined"
    if all(v == "holds" for v in verdicts):
        return "holds"
    for v in ("reversed", "does not hold"):
        if v in verdicts:
            return v
    return "unresolved"


def _exact_at_boundary(rate: str, r: Any) -> tuple[Any, str]:
    """``r`` with the exact (Clopper–Pearson) interval where a rate is 0 or 1 and every
    bootstrap replicate gave that same value, with the note that says so.

    A percentile interval cannot leave the boundary: 16 of 16 negatives below the
    threshold give Sp = 1 in every replicate, and the interval [1, 1] would make
    "Sp ≥ 0.95 holds" out of 16 images, where the exact 95 % interval reaches down to
    0.79.  Elsewhere the bootstrap interval stands.
    """
    n = r.n_pos if rate == "sensitivity" else r.n_neg
    est = r.estimate
    if not (n > 0 and est in (0.0, 1.0) and r.ci_low == r.ci_high == est):
        return r, ""
    k = round(est * n)
    ci = proportion_ci(k, n, method="clopper_pearson", confidence_level=r.confidence_level)
    note = (f"{_RATE[rate]} = {k:g}/{n:g}: every bootstrap replicate gives {est:g}, so the "
            "percentile interval has no width at the boundary; the exact (Clopper–Pearson) "
            f"interval [{ci.ci_low:.3f}, {ci.ci_high:.3f}] is used")
    return dataclasses.replace(r, ci_low=ci.ci_low, ci_high=ci.ci_high,
                               ci_method="clopper_pearson"), note


def _judge_operating_point(claim: OperatingPointClaim, ev: _Eval, cell: Any, res: Any,
                           base: dict[str, Any], notes: list[str], B: int
                           ) -> dict[str, Any]:
    t = claim.threshold
    parts: list[tuple[str, float, Any, bool]] = []  # (rate, level, result, by construction)
    threshold: float | None = None
    if isinstance(cell, TransportCell):
        threshold = float(res.threshold)
        own = cell.design == "fixed" and (ev.threshold_on is not None or
                                          (isinstance(t, ThresholdFrom) and t.source == ev.cohort))
        # the rule guarantees its rate on the cases it was chosen on, not on a part of them:
        # a subgroup's Se (or a named negative group's Sp) is a claim like any other
        same = {"sensitivity": ev.subgroup is None,
                "specificity": ev.subgroup is None and ev.negatives == "all"}
        for rate, level in claim.constraints():
            r = res.target_sensitivity if rate == "sensitivity" else res.target_specificity
            built = (own and same[rate] and cell.rule == rate
                     and level <= float(cell.target_value or 0.0))
            parts.append((rate, level, r, built))
        design = res.design
        notes.append(f"τ = {threshold:.6g} chosen on {ev.threshold_on or t.source} by "  # type: ignore
                     f"{cell.rule}" + (f" {cell.target_value:g}" if cell.target_value is not None
                                       else "") + f" (design {res.design})")
    else:
        if t is None:
            mid = f"sensitivity_at_specificity[min_specificity={claim.specificity_at_least}]"
            r = res.marginal[(claim.model, mid)]
            parts.append(("sensitivity", float(claim.sensitivity_at_least), r, False))
        else:
            threshold = float(t)
            for rate, level in claim.constraints():
                r = res.marginal[(claim.model, f"{rate}[threshold={threshold}]")]
                parts.append((rate, level, r, False))
        design = parts[0][2].design
    judged = []
    for rate, level, r, built in parts:
        r, said = _exact_at_boundary(rate, r)
        notes.append(said)
        judged.append((rate, level, r, "by construction" if built else
                       ck.verdict_level(r.estimate, r.ci_low, r.ci_high, level)))
    live = [v for *_, v in judged if v != "by construction"]
    verdict = _combine(live) if live else "by construction"
    for rate, level, _r, v in judged:
        if v == "by construction":
            notes.append(f"{_RATE[rate]} ≥ {level:g} on the threshold's own source holds by "
                         "construction (not counted)")
    # the row shows the constraint that decides the verdict (the other beside it), so that
    # the interval, the claimed value and the counts of an unresolved claim belong together
    deciding = judged[ck.deciding_part([x[3] for x in judged], verdict,
                                       met=("holds", "by construction"))]
    first = deciding
    second = next((x for x in judged if x is not deciding), None)
    crit = first[0] if t is not None else f"sensitivity_at_specificity[min_specificity=" \
                                          f"{claim.specificity_at_least}]"
    notes.append(degenerate_note(max(x[2].n_degenerate for x in judged), B))
    extra: dict[str, Any] = {}
    if second is not None:
        extra = {"other_criterion": second[0], "other_estimate": second[2].estimate,
                 "other_ci_low": second[2].ci_low, "other_ci_high": second[2].ci_high}
    r = first[2]
    return _row(base, verdict=verdict, note=join(*notes), design=design, n_resamples=B,
                estimate=r.estimate, ci_low=r.ci_low, ci_high=r.ci_high, threshold=threshold,
                criterion=crit, n=r.n, n_pos=r.n_pos, n_neg=r.n_neg,
                n_degenerate=max(x[2].n_degenerate for x in judged), claim_value=first[1],
                claim_side="greater", **extra)
