"""The audit specification (YAML), composed from the registered blocks' own sections.

An :class:`AuditSpec` names the inputs (a score table, raw annotations, a judgment
table), the cohorts and their roles, the primary prompt, the model cards, the
resampling settings, which blocks to run and how claims are stated; every registered
block adds its own section under its key (``prompts:``, ``spectrum: [...]``,
``transport: [...]``, ``error_structure:``, ...; see :data:`medaudit.blocks.BLOCKS`), so
the YAML surface of a block is defined next to the block.  Unknown keys are errors
(with the closest valid key suggested), and every cohort, model, prompt and group the
spec names must exist in the table (:func:`check_spec_against_table`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import pandas as pd
from pydantic import Field, create_model, field_validator, model_validator

from medaudit.agreement.spec import JudgmentsSpec
from medaudit.backends import ExecutionSpec
from medaudit.blocks import BLOCKS
from medaudit.blocks.block import INPUTS
from medaudit.blocks.checks import DeclaredCohorts, unknown
from medaudit.blocks.context import CohortSpec, Resampling, Study
from medaudit.exceptions import SchemaError
from medaudit.io.limits import NPermutations, NResamples, Seed, validate_n_resamples
from medaudit.io.limits import check_spec_limits as _check_spec_limits
from medaudit.io.messages import quote
from medaudit.io.modelcard import ModelCard
from medaudit.io.specfile import Strict, fraction, load_yaml_model
from medaudit.labels.spec import AnnotationsSpec

__all__ = ["DEMO_SPEC", "AuditSpec", "CohortSpec", "ModelCard", "WideScoresSpec", "load_spec",
           "check_spec_against_table", "BLOCK_NAMES", "SCORE_BLOCKS"]

#: the embedded default audit (``medaudit demo``, ``make demo``): the seeded simulated
#: paper-000 study; ``examples/paper000_simulated.yaml`` is the same file
DEMO_SPEC = Path(__file__).with_name("paper000_simulated.yaml")
#: every registered block, in run order
BLOCK_NAMES = tuple(BLOCKS)
#: blocks reading the score table (paper 000 style inputs)
SCORE_BLOCKS = tuple(n for n, b in BLOCKS.items() if "scores" in b.requires)
_SCORE_INPUTS = ("scores", "simulate", "scores_wide")
#: the ``scores:`` of a spec whose score table is handed over in memory (``medaudit.audit(df)``)
IN_MEMORY = "<DataFrame>"
#: the cohort of a score table without a ``cohort`` column (one site, one cohort)
SINGLE_COHORT = "all"


#: the columns :func:`medaudit.io.tables.read_wide` makes from a wide file (never kept as they are)
_WIDE_MADE = ("image_id", "cohort", "model", "prompt", "score", "label", "seed")


class WideScoresSpec(Strict):
    """A wide prediction file: one row per image, one score column per model (and seed).

    Every column of the file has one declared use, and nothing is ignored unless the entry
    says so:

    * ``id_column`` holds the image id, ``label_column`` the 0/1 label (or give
      ``label_column: null`` when labels come from ``annotations:``);
    * the cohort is ``cohort:`` for the whole file, or each row's value of
      ``cohort_column`` (a file holding several hospitals); give exactly one of the two;
    * ``keep_columns`` are carried beside every score as they are (``negative_group``,
      ``patient_id``, subgroup columns such as ``sex``), ``ignore_columns`` are left out;
    * every other column is a score column: its whole name must match ``column_pattern``,
      a regular expression with a named group ``model`` (and optionally ``seed`` and
      ``prompt``), e.g. ``s(?P<seed>\\d+)_(?P<model>\\w+)`` for ``s42_densenet``.

    A column that is none of these is an error naming the file and the column, and so is
    a score column holding anything but finite numbers (with the default pattern, which
    matches every name, that is how a forgotten column of text shows itself).
    """

    #: the CSV or Parquet file, relative to the spec file
    path: str
    #: the one cohort of every row (give this or ``cohort_column``)
    cohort: str | None = None
    #: the column holding each row's cohort (give this or ``cohort``)
    cohort_column: str | None = None
    #: the column holding the image id (read as text: ``007`` stays ``007``)
    id_column: str = "image_id"
    #: the 0/1 label column; None when the file has no label column (labels then come from
    #: ``annotations:``)
    label_column: str | None = "label"
    #: which columns are score columns, and the model (seed, prompt) each holds: a regular
    #: expression with a named group ``model`` that the whole column name must match
    column_pattern: str = r"(?P<model>.+)"
    #: text put before every model name taken from a column name
    model_prefix: str = ""
    #: the prompt of every score column whose pattern has no ``prompt`` group
    prompt: str = "none"
    #: per-image columns carried beside every score, as they are
    keep_columns: list[str] = Field(default_factory=list)
    #: columns read and left out on purpose
    ignore_columns: list[str] = Field(default_factory=list)

    @field_validator("column_pattern")
    @classmethod
    def _pattern(cls, v: str) -> str:
        import re

        try:
            groups = re.compile(v).groupindex
        except re.error as exc:
            raise ValueError(f"column_pattern {v!r} is not a valid regular expression: {exc}") from None
        if "model" not in groups:
            raise ValueError(f"column_pattern {v!r} needs a named group 'model', e.g. "
                             "'(?P<model>.+)' or 's(?P<seed>\\d+)_(?P<model>\\w+)'")
        return v

    @model_validator(mode="after")
    def _columns(self) -> WideScoresSpec:
        if (self.cohort is None) == (self.cohort_column is None):
            raise ValueError("give exactly one of `cohort:` (the cohort of the whole file) or "
                             "`cohort_column:` (the column holding each row's cohort); got "
                             + ("both" if self.cohort is not None else "neither"))
        named = [("id_column", self.id_column), ("label_column", self.label_column),
                 ("cohort_column", self.cohort_column),
                 *(("keep_columns", c) for c in self.keep_columns),
                 *(("ignore_columns", c) for c in self.ignore_columns)]
        seen: dict[str, str] = {}
        for role, col in named:
            if col is None:
                continue
            if col in seen:
                raise ValueError(f"column {col!r} is named twice ({seen[col]} and {role}); give "
                                 "each column one use")
            seen[col] = role
        made = [c for c in self.keep_columns if c in _WIDE_MADE]
        if made:
            raise ValueError(f"keep_columns {made} would replace a column the reader makes "
                             f"({', '.join(_WIDE_MADE)}); rename them in the file")
        return self


class _AuditSpecBase(Strict):
    """A whole audit: inputs, cohorts, analyses and resampling settings."""

    #: the audit's name (default: the score file's stem, or the simulation's name)
    name: str | None = None
    scores: str | None = None  # path (relative to the spec file) to CSV/Parquet
    simulate: Literal["paper000"] | None = None  # the embedded simulated study instead
    scores_wide: list[WideScoresSpec] | None = None  # wide prediction files instead
    #: shrink the simulated study (quick runs); above 1 (at most 64) it is enlarged, which
    #: only benchmarks want: it needs `allow_large: true`
    simulate_scale: float = Field(1.0, gt=0.0, le=64.0)
    score_scale: Literal["probabilities", "logits"] = "probabilities"
    models: list[ModelCard] = Field(default_factory=list)
    #: default: every cohort of the score table, role primary, in sorted order
    cohorts: dict[str, CohortSpec] = Field(default_factory=dict)
    #: the prompt a table without a ``prompt`` column is read at (models without prompts)
    primary_prompt: str = "none"
    #: a whole number in [0, 2**32 - 1] (every derived cell generator starts from it)
    seed: Seed = 2026
    n_resamples: NResamples = 2000
    n_permutations: NPermutations = 10_000
    confidence_level: float = 0.95
    #: lift the maxima of B and of the permutation count, and the cost limit (io.limits)
    allow_large: bool = False
    #: default: every block whose inputs the spec gives (``requires`` of each block), in
    #: registry order
    blocks: list[Literal[BLOCK_NAMES]] | None = None  # type: ignore[valid-type]
    execution: ExecutionSpec = Field(default_factory=ExecutionSpec)
    annotations: AnnotationsSpec | None = None
    judgments: JudgmentsSpec | None = None

    @field_validator("name")
    @classmethod
    def _printed_name(cls, v: str | None) -> str | None:
        # the title of the report, summary.md and every claims file made from the audit
        import re

        from medaudit.io.schema import CONTROL

        if v is not None and (m := re.search(CONTROL, v)):
            raise ValueError(f"holds the control character U+{ord(m.group()):04X} (a line break, "
                             "tab or text-direction override); remove it")
        return v

    @field_validator("confidence_level")
    @classmethod
    def _level(cls, v: float) -> float:
        return fraction(v, "confidence_level")

    @model_validator(mode="after")
    def _inputs(self) -> _AuditSpecBase:
        given = [k for k in _SCORE_INPUTS if getattr(self, k) is not None]
        if len(given) > 1 or (not given and self.judgments is None):
            raise ValueError("give exactly one of `scores:` (a long table), `scores_wide:` (wide "
                             f"prediction files) or `simulate: paper000` (or only `judgments:`); "
                             f"got {given or 'none'}")
        if self.name is None:
            object.__setattr__(self, "name", _default_name(self))
        if self.annotations is not None and (not given or given == ["simulate"]):
            raise ValueError("`annotations:` label the items of a score table read from a file; "
                             "give `scores:` or `scores_wide:` (a `simulate:` table has none)")
        if not given:
            # sections that only describe a score table would otherwise be silently ignored
            unused = (["cohorts"] if self.cohorts else []) + [
                b.key() for n, b in BLOCKS.items()
                if n in SCORE_BLOCKS and getattr(self, b.key()) != b.default_config()]
            if unused:
                raise ValueError(f"{', '.join(f'`{k}:`' for k in unused)} describe(s) a score table, "
                                 "but the spec gives none (`scores:`, `scores_wide:` or "
                                 "`simulate:`); add one or remove the section(s)")
        _check_spec_limits(self)
        if self.simulate_scale > 1.0 and not self.allow_large:
            raise ValueError(f"simulate_scale: {self.simulate_scale:g} enlarges the simulated study "
                             "(scale above 1: a benchmark's size); give at most 1, or set "
                             "`allow_large: true`")
        for b in BLOCKS.values():  # a block's own B meets the same rule as the run's
            own = getattr(getattr(self, b.key()), "n_resamples", None)
            if own is not None:
                validate_n_resamples(own, name=f"{b.key()}.n_resamples",
                                     allow_large=self.allow_large)
        present = {"scores": bool(given), "annotations": self.annotations is not None,
                   "judgments": self.judgments is not None}
        chosen = self.blocks is not None
        if self.blocks is None:
            object.__setattr__(self, "blocks", [n for n, b in BLOCKS.items()
                                                if all(present[r] for r in b.requires)
                                                and b.enabled(getattr(self, b.key()))])
        if len(set(self.blocks)) != len(self.blocks):
            raise ValueError(f"blocks repeat a name: {self.blocks}")
        if self.claims.declared and "claims" not in self.blocks:
            # declared claims are always judged: `blocks:` chooses the other analyses
            object.__setattr__(self, "blocks", ["claims", *self.blocks])
        if chosen and not self.blocks:  # an audit of nothing would "succeed" with an empty report
            raise ValueError("blocks: [] selects no block to run; list the blocks to run (e.g. "
                             "blocks: [discrimination]) or leave `blocks:` out to run every block "
                             "the inputs allow")
        for name in self.blocks:
            for r in sorted(BLOCKS[name].requires, key=lambda r: r == "scores"):
                if present[r]:
                    continue
                if r == "scores":
                    raise ValueError(f"block {name!r} needs {INPUTS[r]}")
                raise ValueError(f"block {name!r} needs {INPUTS[r]} in the spec")
        return self

    # -- what the rest of the package reads ---------------------------------------------
    @property
    def has_scores(self) -> bool:
        """Whether the spec gives a score table (paper-000 style inputs)."""
        return any(getattr(self, k) is not None for k in _SCORE_INPUTS)

    def block_config(self, name: str) -> Any:
        """The section of block ``name`` (its config, or the list of its entries)."""
        return getattr(self, BLOCKS[name].key())

    def card(self, model: str) -> ModelCard:
        """The model card for ``model`` (an empty one when the spec gives none)."""
        return self.study().card(model)

    def cohorts_with_role(self, *roles: str) -> list[str]:
        return [k for k, v in self.cohorts.items() if v.role in roles]

    def study(self) -> Study:
        """What the audit is about (cohorts, primary prompt, cards, score scale), for blocks."""
        return Study(cohorts=dict(self.cohorts), primary_prompt=self.primary_prompt,
                     cards=tuple(self.models), score_scale=self.score_scale,
                     auroc_at_least=self.claims.auroc_at_least,
                     subgroups=BLOCKS["subgroups"].columns(self.subgroups))

    def resampling(self) -> Resampling:
        """The run's seed, B, interval level and permutation count, for blocks."""
        return Resampling(seed=self.seed, n_resamples=self.n_resamples,
                          confidence_level=self.confidence_level,
                          n_permutations=self.n_permutations)


def _default_name(spec: _AuditSpecBase) -> str:
    if spec.scores == IN_MEMORY:
        return "audit"
    if spec.scores is not None:
        return Path(str(spec.scores)).stem or "audit"
    if spec.scores_wide:
        return Path(spec.scores_wide[0].path).stem
    if spec.simulate is not None:
        return f"{spec.simulate}-simulated"
    return "audit"


def _block_sections() -> dict[str, Any]:
    """One field per registered block: its config (or list of entries), defaulted."""
    return {b.key(): (b.spec_annotation(), Field(default_factory=b.default_config))
            for b in BLOCKS.values()}


#: the audit spec: the inputs and settings above plus one section per registered block
AuditSpec = create_model("AuditSpec", __base__=_AuditSpecBase, __module__=__name__,
                         **_block_sections())
AuditSpec.__doc__ = _AuditSpecBase.__doc__


def load_spec(path: str | Path) -> tuple[AuditSpec, Path]:
    """Read and validate a YAML audit spec; return it and its directory (for relative paths)."""
    return load_yaml_model(path, AuditSpec, what="audit spec")


def check_spec_against_table(spec: AuditSpec, table: pd.DataFrame, *, source: str,
                             cohorts_from_table: bool = False) -> None:
    """Raise :class:`SchemaError` listing every name in the spec that the table lacks.

    ``cohorts_from_table``: the spec's cohorts were read from the table (the user declared
    none), so messages name them as the table's.
    """
    cohorts = set(table["cohort"].unique())
    models = set(table["model"].unique())
    prompts = set(table["prompt"].unique())
    errs: list[str] = []
    errs += unknown("cohort", spec.cohorts, cohorts, "cohorts")
    if "primary_prompt" not in spec.model_fields_set and spec.primary_prompt not in prompts:
        # the default prompt of a table without prompts, read against one that has them
        errs.append(f"  - primary_prompt: the table has a prompt column ({quote(sorted(prompts))}); "
                    f"name the prompt the claims are made at, e.g. `primary_prompt: "
                    f"{sorted(prompts)[0]}`")
    else:
        errs += unknown("prompt", [spec.primary_prompt], prompts, "primary_prompt")
    errs += unknown("model", [c.name for c in spec.models], models, "models")
    # cohorts the spec does not declare were read from the table: name them as the table's
    declared = (sorted(spec.cohorts) if cohorts_from_table
                else DeclaredCohorts(spec.cohorts, in_table=cohorts))
    for name in SCORE_BLOCKS:
        errs += BLOCKS[name].check(spec.block_config(name), table, declared)
    if errs:
        # the lines name keys of the spec: say so, so a reader fixes the spec, not the table
        raise SchemaError(f"{source}: the audit spec names what this score table lacks (fix "
                          "the spec keys below, or the table):\n" + "\n".join(errs))
    # every declared cohort needs both classes, and every declared group must be non-empty
    for c in spec.cohorts:
        g = table[table["cohort"] == c]
        if g["label"].nunique() < 2:
            # only cohorts that themselves have both classes are worth suggesting
            others = [o for o in spec.cohorts if o != c
                      and table.loc[table["cohort"] == o, "label"].nunique() >= 2]
            fix = (f"leave it out of `cohorts:` to audit the others ({quote(others)})" if others
                   else "add the images of the other class")
            if others and cohorts_from_table:
                listed = ", ".join(f"{o}: {{}}" for o in others)
                fix = (f"declare `cohorts:` with the others to audit them without it (in a spec "
                       f"`cohorts: {{{listed}}}`; from Python cohorts={{"
                       + ", ".join(f"{o!r}: {{}}" for o in others) + "})")
            raise SchemaError(f"{source}: cohort {c!r} has only label {int(g['label'].iloc[0])}; "
                              f"every audited cohort needs positives and negatives: {fix}.")
