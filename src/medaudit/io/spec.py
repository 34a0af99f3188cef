"""The audit specification (YAML), validated with pydantic, and its checks against the data.

An :class:`AuditSpec` names the score table, the cohorts and their roles, the
primary prompt, negative-group definitions, prevalence grids, threshold sources,
resampling settings and which blocks to run.  Unknown keys are errors (with the
closest valid key suggested), and every cohort, model, prompt and group the spec
names must exist in the table.
"""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import Any, Literal

import pandas as pd
from pydantic import BaseModel, Field, ValidationError, field_validator, model_validator

from medaudit.exceptions import SchemaError
from medaudit.io._specbase import Strict as _Strict
from medaudit.io._specbase import fraction as _fraction
from medaudit.io.spec_agreement import ErrorStructureSpec, JudgmentsSpec
from medaudit.io.spec_estimators import AgreementSpec
from medaudit.io.spec_labels import AnnotationsSpec, LabelUncertaintySpec

__all__ = ["AuditSpec", "ModelCard", "load_spec", "load_yaml_model", "format_validation_error",
           "check_spec_against_table", "BLOCK_NAMES"]

#: blocks reading the score table (paper 000); the default when scores are given
SCORE_BLOCKS = ("discrimination", "operating_points", "prompts", "spectrum", "prevalence",
                "transport", "retained")
BLOCK_NAMES = (*SCORE_BLOCKS, "label_uncertainty", "error_structure", "agreement")






class ModelCard(_Strict):
    """Model metadata travelling beside the scores (checkpoint, revision, processor, exposure)."""

    name: str
    checkpoint: str | None = None
    revision: str | None = None
    processor: str | None = None
    score_rule: str | None = None
    learned_scale: float | None = None
    library_versions: dict[str, str] = Field(default_factory=dict)
    #: how a trained model was made (initial weights, device, autocast, seeds, split seed...)
    training: dict[str, str] = Field(default_factory=dict)
    #: cohort -> note, e.g. {"vindr": "documented pretraining exposure to VinDr-CXR"}
    exposure: dict[str, str] = Field(default_factory=dict)


class CohortSpec(_Strict):
    role: Literal["primary", "source", "extension", "descriptive"] = "primary"
    #: bootstrap design for this cohort's marginal intervals (paper 000: VinDr within-label)
    design: Literal["ordinary", "within_label"] = "ordinary"


class PromptSpec(_Strict):
    families: list[str] | None = None  # default: every prompt in the table, primary first
    test_cohorts: list[str] | None = None  # the declared BH family; default: primary cohorts
    alpha: float = 0.05
    average: bool = True  # equal-weight average of family scores vs the primary
    decomposition_cohorts: list[str] | None = None  # default: test cohorts

    @field_validator("alpha")
    @classmethod
    def _alpha(cls, v: float) -> float:
        return _fraction(v, "alpha")


class SpectrumSpec(_Strict):
    cohort: str
    groups: list[str] = Field(min_length=2)
    #: named-group contrasts against this reference group (paper 000 Tables 10-11)
    reference: str | None = None
    #: permutation test of group membership for two-group contrasts (Table 9)
    test: Literal["permutation", "none"] = "permutation"
    prevalence: float | None = None  # Brier against each group at this pi (descriptive)

    @model_validator(mode="after")
    def _check(self) -> SpectrumSpec:
        if len(set(self.groups)) != len(self.groups):
            raise ValueError(f"groups repeat a name: {self.groups}")
        if self.reference is not None and self.reference not in self.groups:
            raise ValueError(f"reference {self.reference!r} must be one of groups {self.groups}")
        if self.prevalence is not None:
            _fraction(self.prevalence, "prevalence")
        return self


class PrevalenceSpec(_Strict):
    cohorts: list[str] = Field(min_length=1)
    grid: list[float] = Field(min_length=1)
    primary: float

    @model_validator(mode="after")
    def _check(self) -> PrevalenceSpec:
        for v in self.grid:
            _fraction(v, "prevalence grid value")
        _fraction(self.primary, "primary prevalence")
        if self.primary not in self.grid:
            raise ValueError(f"primary prevalence {self.primary} must be in grid {self.grid}")
        return self


class TransportSpec(_Strict):
    source: str
    targets: list[str] = Field(min_length=1)
    rules: list[Literal["sensitivity", "specificity"]] = Field(default_factory=lambda: ["sensitivity"])
    target_value: float = 0.95
    design: Literal["reestimate", "fixed"] = "reestimate"
    #: targets whose intervals use the fixed-threshold design instead (paper 000: VinDr)
    fixed_targets: list[str] = Field(default_factory=list)

    @field_validator("target_value")
    @classmethod
    def _tv(cls, v: float) -> float:
        return _fraction(v, "target_value")


class ClaimsSpec(_Strict):
    """Which claims the portability matrix states (rankings and thresholds always)."""

    #: reliability claims "AUROC >= level" for every model x primary cohort reaching it
    auroc_at_least: float | None = 0.90

    @field_validator("auroc_at_least")
    @classmethod
    def _lvl(cls, v: float | None) -> float | None:
        return None if v is None else _fraction(v, "auroc_at_least")


class RetainedSpec(_Strict):
    """Compare two score sets on identical targets (e.g. ensembles before/after exclusion)."""

    a: str
    b: str
    cohorts: list[str] = Field(min_length=1)
    prompt: str | None = None


class WideScoresSpec(_Strict):
    """A wide prediction file: one row per image, one score column per model (and seed).

    ``column_pattern`` is a regular expression with a named group ``model`` (and
    optionally ``seed`` and ``prompt``) matched against the column names; columns
    that do not match (other than the id and label columns) are an error, so
    nothing is silently ignored.
    """

    path: str
    cohort: str
    id_column: str = "image_id"
    #: None when the file has no label column (labels then come from ``annotations:``)
    label_column: str | None = "label"
    column_pattern: str = r"(?P<model>.+)"
    model_prefix: str = ""
    prompt: str = "none"


class ExecutionSpec(_Strict):
    """Where independent cells run: in this process (default) or on a Ray cluster."""

    backend: Literal["local", "ray"] = "local"
    #: Ray address ("auto", "ray://host:10001"); None starts a local Ray instance
    address: str | None = None
    num_workers: int | None = Field(None, ge=1)


class AuditSpec(_Strict):
    """A whole audit: inputs, cohorts, analyses and resampling settings."""

    name: str
    scores: str | None = None  # path (relative to the spec file) to CSV/Parquet
    simulate: Literal["paper000"] | None = None  # the embedded simulated study instead
    scores_wide: list[WideScoresSpec] | None = None  # wide prediction files instead
    simulate_scale: float = Field(1.0, gt=0.0, le=1.0)  # shrink the simulated study (quick runs)
    score_scale: Literal["probabilities", "logits"] = "probabilities"
    models: list[ModelCard] = Field(default_factory=list)
    cohorts: dict[str, CohortSpec] = Field(default_factory=dict)
    primary_prompt: str = "none"
    seed: int = 2026
    n_resamples: int = Field(2000, ge=10)
    n_permutations: int = Field(10_000, ge=9)
    confidence_level: float = 0.95
    #: default: the paper-000 blocks when scores are given (plus ``label_uncertainty`` with
    #: annotations), ``error_structure`` and ``agreement`` when judgments are given
    blocks: list[Literal[BLOCK_NAMES]] | None = None  # type: ignore[valid-type]
    prompts: PromptSpec = Field(default_factory=PromptSpec)
    spectrum: list[SpectrumSpec] = Field(default_factory=list)
    prevalence: list[PrevalenceSpec] = Field(default_factory=list)
    transport: list[TransportSpec] = Field(default_factory=list)
    retained: list[RetainedSpec] = Field(default_factory=list)
    claims: ClaimsSpec = Field(default_factory=ClaimsSpec)
    execution: ExecutionSpec = Field(default_factory=ExecutionSpec)
    annotations: AnnotationsSpec | None = None
    label_uncertainty: LabelUncertaintySpec = Field(default_factory=LabelUncertaintySpec)
    judgments: JudgmentsSpec | None = None
    error_structure: ErrorStructureSpec = Field(default_factory=ErrorStructureSpec)
    agreement: AgreementSpec = Field(default_factory=AgreementSpec)

    @field_validator("confidence_level")
    @classmethod
    def _level(cls, v: float) -> float:
        return _fraction(v, "confidence_level")

    @model_validator(mode="after")
    def _inputs(self) -> AuditSpec:
        given = [k for k in ("scores", "simulate", "scores_wide") if getattr(self, k) is not None]
        if len(given) > 1 or (not given and self.judgments is None):
            raise ValueError("give exactly one of `scores:` (a long table), `scores_wide:` (wide "
                             f"prediction files) or `simulate: paper000` (or only `judgments:`); "
                             f"got {given or 'none'}")
        if given and not self.cohorts:
            raise ValueError("`cohorts:` must name at least one cohort of the score table")
        if self.annotations is not None and (not given or given == ["simulate"]):
            raise ValueError("`annotations:` label the items of a score table read from a file; "
                             "give `scores:` or `scores_wide:` (a `simulate:` table has none)")
        if not given:
            # sections that only describe a score table would otherwise be silently ignored
            unused = [k for k in ("cohorts", "spectrum", "prevalence", "transport", "retained")
                      if getattr(self, k)]
            if unused:
                raise ValueError(f"{', '.join(f'`{k}:`' for k in unused)} describe(s) a score table, "
                                 "but the spec gives none (`scores:`, `scores_wide:` or "
                                 "`simulate:`); add one or remove the section(s)")
        if self.blocks is None:
            default: list[str] = []
            if given:
                default += list(SCORE_BLOCKS)
                if self.annotations is not None:
                    default.append("label_uncertainty")
            if self.judgments is not None:
                default += ["error_structure", "agreement"]
            object.__setattr__(self, "blocks", default)
        if len(set(self.blocks)) != len(self.blocks):
            raise ValueError(f"blocks repeat a name: {self.blocks}")
        needs = {"label_uncertainty": ("annotations", self.annotations),
                 "error_structure": ("judgments", self.judgments),
                 "agreement": ("judgments", self.judgments)}
        for b in self.blocks:
            if b in needs and needs[b][1] is None:
                raise ValueError(f"block {b!r} needs `{needs[b][0]}:` in the spec")
            if b in SCORE_BLOCKS and not given:
                raise ValueError(f"block {b!r} needs a score table (`scores:`, `scores_wide:` or "
                                 "`simulate:`)")
        return self

    @property
    def has_scores(self) -> bool:
        """Whether the spec gives a score table (paper-000 style inputs)."""
        return any(getattr(self, k) is not None for k in ("scores", "simulate", "scores_wide"))

    def card(self, model: str) -> ModelCard:
        """The model card for ``model`` (an empty one when the spec gives none)."""
        for c in self.models:
            if c.name == model:
                return c
        return ModelCard(name=model)

    def cohorts_with_role(self, *roles: str) -> list[str]:
        return [k for k, v in self.cohorts.items() if v.role in roles]


def format_validation_error(exc: ValidationError, source: str, *, root: type[BaseModel] | None = None,
                            what: str = "audit spec") -> str:
    """One line per pydantic error, naming the key path; unknown keys get a "did you mean".

    ``root`` is the model validated (default :class:`AuditSpec`); the suggestion walks its
    field annotations down the error's key path to the sub-model that owns the key.
    """
    root = root or AuditSpec
    lines = []
    for err in exc.errors():
        # a model-level check (a combination of sections) has no key path
        loc = ".".join(str(x) for x in err["loc"]) or "(whole spec)"
        msg = err["msg"].removeprefix("Value error, ") if err["type"] == "value_error" else err["msg"]
        if err["type"] == "extra_forbidden":
            parent = root
            for part in err["loc"][:-1]:
                fld = getattr(parent, "model_fields", {}).get(part) if isinstance(part, str) else None
                ann = getattr(fld, "annotation", None) if fld else None
                parent = next((a for a in getattr(ann, "__args__", (ann,)) if hasattr(a, "model_fields")),
                              parent)
            close = difflib.get_close_matches(str(err["loc"][-1]), list(parent.model_fields), n=1)
            msg = "unknown key" + (f"; did you mean {close[0]!r}?" if close else "")
        lines.append(f"  - {loc}: {msg}")
    return f"{source}: the {what} is invalid:\n" + "\n".join(lines)


def load_yaml_model(path: str | Path, model: type[BaseModel], *, what: str) -> tuple[Any, Path]:
    """Read a YAML mapping and validate it as ``model``; return it and the file's folder.

    Every failure (missing file, malformed YAML, not a mapping, invalid keys or values)
    is one clear error naming the file.
    """
    import yaml

    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{what} {str(path)!r} does not exist.")
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise SchemaError(f"{path}: malformed YAML: {exc}") from None
    if not isinstance(raw, dict):
        raise SchemaError(f"{path}: the {what} must be a YAML mapping (key: value), "
                          f"not {type(raw).__name__}.")
    try:
        return model.model_validate(raw), path.parent
    except ValidationError as exc:
        raise SchemaError(format_validation_error(exc, str(path), root=model, what=what)) from None


def load_spec(path: str | Path) -> tuple[AuditSpec, Path]:
    """Read and validate a YAML audit spec; return it and its directory (for relative paths)."""
    return load_yaml_model(path, AuditSpec, what="audit spec")


def _unknown(kind: str, names, known, where: str) -> list[str]:
    out = []
    for n in names:
        if n not in known:
            close = difflib.get_close_matches(str(n), [str(k) for k in known], n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            out.append(f"  - {where}: unknown {kind} {n!r}{hint}; the table has {sorted(known)}")
    return out


def check_spec_against_table(spec: AuditSpec, table: pd.DataFrame, *, source: str) -> None:
    """Raise :class:`SchemaError` listing every name in the spec that the table lacks."""
    cohorts = set(table["cohort"].unique())
    models = set(table["model"].unique())
    prompts = set(table["prompt"].unique())
    errs: list[str] = []
    errs += _unknown("cohort", spec.cohorts, cohorts, "cohorts")
    errs += _unknown("prompt", [spec.primary_prompt], prompts, "primary_prompt")
    errs += _unknown("model", [c.name for c in spec.models], models, "models")
    errs += _unknown("prompt", spec.prompts.families or [], prompts, "prompts.families")
    for key in ("test_cohorts", "decomposition_cohorts"):
        errs += _unknown("cohort", getattr(spec.prompts, key) or [], spec.cohorts, f"prompts.{key}")
    for i, sp in enumerate(spec.spectrum):
        errs += _unknown("cohort", [sp.cohort], spec.cohorts, f"spectrum[{i}].cohort")
        if sp.cohort in cohorts and "negative_group" in table.columns:
            g = table.loc[(table["cohort"] == sp.cohort) & (table["label"] == 0), "negative_group"]
            errs += _unknown("negative group", sp.groups, set(g.unique()) - {""},
                             f"spectrum[{i}].groups")
        elif "negative_group" not in table.columns:
            errs.append(f"  - spectrum[{i}]: the table has no 'negative_group' column")
    for i, pv in enumerate(spec.prevalence):
        errs += _unknown("cohort", pv.cohorts, spec.cohorts, f"prevalence[{i}].cohorts")
    for i, tr in enumerate(spec.transport):
        errs += _unknown("cohort", [tr.source, *tr.targets, *tr.fixed_targets], spec.cohorts,
                         f"transport[{i}]")
    for i, rt in enumerate(spec.retained):
        errs += _unknown("model", [rt.a, rt.b], models, f"retained[{i}]")
        errs += _unknown("cohort", rt.cohorts, spec.cohorts, f"retained[{i}].cohorts")
        if rt.prompt is not None:
            errs += _unknown("prompt", [rt.prompt], prompts, f"retained[{i}].prompt")
    if errs:
        raise SchemaError(f"{source}: the spec names things the score table lacks:\n"
                          + "\n".join(errs))
    # every declared cohort needs both classes, and every declared group must be non-empty
    for c in spec.cohorts:
        g = table[table["cohort"] == c]
        if g["label"].nunique() < 2:
            raise SchemaError(f"{source}: cohort {c!r} has only label {int(g['label'].iloc[0])}; "
                              "every audited cohort needs positives and negatives.")
