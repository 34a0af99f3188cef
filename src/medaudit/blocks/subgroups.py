"""Subgroup disaggregation: every metric per level of declared score-table columns (issue 16, item 3).

``subgroups: [sex, age_band, scanner]`` names columns of the score table (one value per
image; the long form ``subgroups: {columns: [...], min_group_size: 30, max_levels: 20}``
sets the options).  For every declared column, every cohort and every model at the
primary prompt the block reports AUROC, AP, Brier and ECE15 (the last two with
probabilities only), Se at Sp >= 0.95 and Sp at Se >= 0.95 on the whole cohort and on each
level of the column, with the differences and ratios of each level to the whole cohort and
between every two levels, and fairlearn's ``difference()`` / ``ratio()`` summaries.

Design (``<cohort design>+subgroup``, :func:`medaudit.stats.subgroup_bootstrap`).  A
level is part of its cohort, so the two are not independent samples.  Each replicate
resamples the cohort **once** with the cohort's design (``ctx.cohort_design``: ordinary,
or within-label for paper 000's VinDr) and evaluates every metric on the whole draw and
on each level's part of that same draw (the replicate weights restricted to the level's
images).  Differences and ratios (``level - all``, ``level / all``, ``a - b``, ``a / b``,
``max - min``, ``min / max``) are formed within each replicate, so their intervals carry
the dependence of a level on its cohort and the joint variation of the levels.  Level
sizes vary between replicates (a level is a property of an image, not a sampling
stratum); a replicate in which a level's metric is undefined is counted in
``n_degenerate``.  One cell per cohort x column with key ``(subgroups, cohort, prompt)``:
every column of a cohort sees the very same draws, so its ``(all)`` rows are identical
from column to column, and the results do not depend on the backend or cell order.

Missing values.  An image without a value in a subgroup column (an empty cell) is kept
in the level ``(missing)``: the levels partition the cohort, so the ``(all)`` rows are
the cohort's own metrics and the comparison with the cohort is not shifted by dropping
images.  ``(missing)`` is a level like any other (in the contrasts, the Holm family and
the summaries, as fairlearn would treat it with the value filled in); the block notes
how many images it holds per column and cohort.

Small groups.  A level with fewer than ``min_group_size`` images (default 30) carries the
qualification "small group (n=.. < 30)" on each of its rows; a level without positives
(or negatives) has NaN for the metrics that need both classes, with the qualification
"metric undefined: no positives in this group", never an error.  Both are counted in a
note.  A level whose metric is undefined on the full cohort is left out of that
metric's summaries (as fairlearn's ``group_min``/``group_max`` skip NaN).

Tests and multiplicity.  Between-level differences carry a two-sided bootstrap p-value
from the same replicates (the inversion of the percentile interval,
:func:`medaudit.stats.bootstrap_pvalue`), Holm-adjusted within the family of one
cohort x model x subgroup column x criterion: every pair of that column's levels
(``family`` column; undefined tests count in the family size).  Contrasts with the
whole cohort, ratios and summaries are descriptive (no test).

Tables
------
``metrics``
    One row per cohort x subgroup column x group x model x criterion: E with
    ``negatives = "all"``, ``criterion`` the metric id (``roc_auc``,
    ``average_precision``, ``brier_score``, ``ece[n_bins=15]``,
    ``sensitivity_at_specificity[min_specificity=0.95]``,
    ``specificity_at_sensitivity[min_sensitivity=0.95]``), then ``subgroup`` (the column)
    and ``group`` (its level, or ``(all)`` for the whole cohort from the same draws), the
    estimate, interval, counts and qualification.
``contrasts``
    One row per cohort x column x model x criterion x contrast: ``contrast`` is
    ``to_overall`` (``group = "F - all"`` / ``"F / all"``, ``group_a = "F"``,
    ``group_b = "(all)"``) or ``between_groups`` (``group = "F - M"`` / ``"F / M"``, levels
    in sorted order); ``criterion`` is ``<metric>_difference`` or ``<metric>_ratio``.
    Difference rows have a ``verdict`` (``a_better`` / ``b_better`` / ``unresolved``;
    better = higher AUROC, AP, Se, Sp and lower Brier, ECE); between-group difference
    rows have ``pvalue``, ``pvalue_adj``, ``significant`` and ``family``.
``summary``
    fairlearn's summaries per cohort x column x model x criterion:
    ``criterion = <metric>_difference`` with ``group = "between_groups"`` (max - min over
    the levels) or ``"to_overall"`` (max |level - all|), and ``<metric>_ratio`` with
    ``"between_groups"`` (min / max) or ``"to_overall"`` (min over levels of
    level/all or all/level, whichever is below 1); ``n_groups`` levels entered.

The claims code reads these tables through :func:`subgroup_rows`.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, Union

import numpy as np
import pandas as pd
from pydantic import AfterValidator, Discriminator, Field

from medaudit._validation import value_kind
from medaudit.blocks.block import Block, BlockConfig, BlockResult, TableSchema
from medaudit.blocks.context import AuditContext, Resampling, cell_rng
from medaudit.blocks.notes import (
    constant_scores_note,
    degenerate_cells_note,
    degenerate_note,
    exposure_note,
    join,
)
from medaudit.blocks.rows import interval, spec_row, verdict
from medaudit.exceptions import DegenerateDataWarning, SchemaError
from medaudit.io.specfile import TAG_MARK, tag
from medaudit.io.tables import ids_as_text
from medaudit.stats import adjust_pvalues, bootstrap_pvalue, subgroup_bootstrap
from medaudit.stats.subgroups import SUMMARIES, SubgroupBootstrapResult

__all__ = ["Subgroups", "SubgroupsConfig", "SubgroupCell", "run_subgroups", "subgroup_rows", "levels_of",
           "METRICS", "DIRECTION", "MISSING", "ALL"]

NAME = "subgroups"
#: (metric, +1 when higher is better / -1 when lower is better, needs probabilities)
_METRICS = (
    ("roc_auc", +1, False),
    ("average_precision", +1, False),
    ("brier_score", -1, True),
    (("ece", {"n_bins": 15}), -1, True),
    (("sensitivity_at_specificity", {"min_specificity": 0.95}), +1, False),
    (("specificity_at_sensitivity", {"min_sensitivity": 0.95}), +1, False),
)
#: the metric ids of the tables, in row order
METRICS = ("roc_auc", "average_precision", "brier_score", "ece[n_bins=15]",
           "sensitivity_at_specificity[min_specificity=0.95]",
           "specificity_at_sensitivity[min_sensitivity=0.95]")
#: metric id -> +1 when higher is better, -1 when lower is better (the verdict's direction)
DIRECTION = {mid: d for mid, (_, d, _) in zip(METRICS, _METRICS, strict=True)}
#: the level of images without a value in a subgroup column
MISSING = "(missing)"
#: the group label of the whole cohort
ALL = "(all)"
#: score-table columns that are not subgroups (they define the table itself)
_RESERVED = ("image_id", "cohort", "model", "prompt", "score", "label", "label_soft", "seed")


def _unique(columns: list[str]) -> list[str]:
    if len(set(columns)) != len(columns):
        raise ValueError(f"subgroup columns repeat a name: {columns}")
    if any(not c.strip() for c in columns):
        raise ValueError("subgroup column names must not be empty")
    return columns


Columns = Annotated[list[str], AfterValidator(_unique)]


class SubgroupsConfig(BlockConfig):
    """The long form of the ``subgroups:`` section (the short form is the list of columns)."""

    #: score-table columns to disaggregate by (one value per image)
    columns: Columns = Field(default_factory=list)
    #: levels with fewer images are qualified "small group"
    min_group_size: int = Field(30, ge=1)
    #: a column with more levels than this in a cohort is an error (bin it first)
    max_levels: int = Field(20, ge=2)


def _form(v: Any) -> str:
    """Which form of the section ``v`` is (so a mistake is reported against that form only)."""
    return TAG_MARK + ("options" if isinstance(v, (Mapping, SubgroupsConfig)) else "columns")


#: the ``subgroups:`` section: a list of column names, or the options mapping
Section = Annotated[Union[Annotated[Columns, tag("columns")],  # noqa: UP007 - a tagged union
                          Annotated[SubgroupsConfig, tag("options", SubgroupsConfig)]],
                    Discriminator(_form)]


def _config(config: Any) -> SubgroupsConfig:
    """The section as a :class:`SubgroupsConfig` (the short form is the list of columns)."""
    if isinstance(config, SubgroupsConfig):
        return config
    if isinstance(config, Mapping):
        return SubgroupsConfig.model_validate(config)
    return SubgroupsConfig(columns=list(config))


def _metric_specs(probabilities: bool) -> tuple[Any, ...]:
    """The metrics to compute (Brier and ECE need probabilities)."""
    return tuple(m for m, _, needs_p in _METRICS if probabilities or not needs_p)


# ----------------------------------------------------------------------------- the cell
@dataclass(frozen=True, eq=False)
class SubgroupCell:
    """One resampling of a cohort, evaluated on the whole and on each level of one column.

    Parameters
    ----------
    key : tuple
        With the run seed it fixes the generator (``cell_rng``); the cells of every column
        of a cohort share it, so they see the same draws.
    label : ndarray of shape (n,)
        Hard 0/1 labels of the cohort's images.
    scores : mapping of str to ndarray of shape (n,)
        Score vectors by model, aligned with ``label``.
    groups : ndarray of shape (n,)
        The level of each image (text; missing values already ``(missing)``).
    metrics : tuple
        Metric ids or ``(name, options)`` pairs.
    design : {"ordinary", "within_label"}, default="ordinary"
    n_resamples : int, optional
        Default: the run's B.
    """

    key: tuple[Any, ...]
    label: np.ndarray
    scores: Mapping[str, np.ndarray]
    groups: np.ndarray
    metrics: tuple[Any, ...]
    design: str = "ordinary"
    n_resamples: int | None = None


def run_subgroups(cell: SubgroupCell, resampling: Resampling) -> SubgroupBootstrapResult:
    """Run one cell with the generator of its key (module level, so a backend can ship it)."""
    with warnings.catch_warnings():
        # counted in n_degenerate and qualified in the rows instead
        warnings.simplefilter("ignore", DegenerateDataWarning)
        return subgroup_bootstrap(cell.label, dict(cell.scores), cell.groups,
                                  metrics=list(cell.metrics), design=cell.design,
                                  n_resamples=cell.n_resamples or resampling.n_resamples,
                                  confidence_level=resampling.confidence_level,
                                  rng=cell_rng(resampling.seed, *cell.key))


# ----------------------------------------------------------------------------- reading columns
def _mixed_kinds(values: pd.Series) -> str:
    """'' for a column of one kind of value (text, integers, floats, booleans; empty cells
    aside), else the kinds it mixes with an example of each: a DataFrame's object column
    can hold 1, '1' and 1.0 side by side (a CSV cannot: pandas reads one kind per column)."""
    if values.dtype != object:
        return ""
    seen: dict[str, Any] = {}
    for v in values.dropna().tolist():
        kind = value_kind(v)
        if kind == "text" and not v.strip():
            continue  # an empty cell: the missing level
        seen.setdefault(kind, v)
    return ", ".join(f"{k} {v!r}" for k, v in seen.items()) if len(seen) > 1 else ""


def levels_of(frame: pd.DataFrame, column: str) -> np.ndarray:
    """The level of ``column`` on each row of ``frame`` as text; empty cells are :data:`MISSING`.

    Integral numbers (an age band read as 1.0, 2.0) become their digits; text stays as it is.
    """
    vals = ids_as_text(frame[["image_id", column]], (column,))[column].to_numpy(dtype=object)
    missing = np.array([v is None or (isinstance(v, float) and v != v) or not str(v).strip()
                        for v in vals], dtype=bool)
    return np.where(missing, MISSING, vals).astype(str)


def _levels(ctx: AuditContext, cohort: str, image_id: np.ndarray, column: str
            ) -> tuple[np.ndarray, int]:
    """The level of each image of ``cohort`` (aligned with ``image_id``) and the missing count."""
    sub = ctx.scores[ctx.scores["cohort"] == cohort].drop_duplicates("image_id")
    if column not in sub.columns:
        raise SchemaError(f"subgroups: the score table has no column {column!r}.")
    out = pd.Series(levels_of(sub, column), index=sub["image_id"].to_numpy()).reindex(
        image_id).to_numpy(dtype=str)
    missing = out == MISSING
    if (out[~missing] == ALL).any():
        raise SchemaError(f"subgroups: column {column!r} has the value {ALL!r} in cohort {cohort!r}, "
                          "the label of the whole cohort in the subgroup tables; rename the level.")
    return out, int(missing.sum())


# ----------------------------------------------------------------------------- rows
def _group_note(n: int, n_pos: float, n_neg: float, estimate: float, min_size: int) -> str:
    small = f"small group (n={n} < {min_size})" if n < min_size else ""
    undefined = ""
    if not np.isfinite(estimate):
        undefined = ("metric undefined: no positives in this group" if n_pos == 0 else
                     "metric undefined: no negatives in this group" if n_neg == 0 else
                     "metric undefined in this group")
    return join(small, undefined)


def _contrast_note(r: Any, stat: str, notes: dict[str, str], *levels: str) -> str:
    """The caveats of the levels a contrast involves (named), and an undefined ratio."""
    ratio = ("ratio undefined: the denominator is 0 or undefined"
             if stat == "ratio" and not np.isfinite(r.estimate) else "")
    if len(levels) == 1:
        return join(notes[levels[0]], ratio)
    return join(*(f"{lv}: {notes[lv]}" for lv in levels if notes[lv]), ratio)


def _row(ctx: AuditContext, model: str, cohort: str, column: str, group: str, r,
         note: str, **values: Any) -> dict[str, Any]:
    deg = degenerate_note(r.n_degenerate, r.n_resamples) if np.isfinite(r.estimate) else ""
    return spec_row(model=model, prompt=ctx.primary_prompt, cohort=cohort,
                    criterion=values.pop("criterion"), design=r.design,
                    n_resamples=r.n_resamples, family=values.pop("family", None),
                    subgroup=column, group=group, **values, **interval(r),
                    qualification=join(exposure_note(ctx, model, cohort), note, deg))


def _cell_rows(ctx: AuditContext, cohort: str, column: str, res: SubgroupBootstrapResult,
               models: list[str], min_size: int, cell: SubgroupCell
               ) -> tuple[list[dict], list[dict], list[dict]]:
    """The metrics, contrasts and summary rows of one cohort x column."""
    levels = res.levels
    metric_ids = list(res.options["metrics"])
    metrics, contrasts, summary = [], [], []
    for m in models:
        s = np.asarray(cell.scores[m])
        by_level = {lv: s[cell.groups == lv] for lv in levels}  # each level's scores, once
        for mid in metric_ids:
            r_all = res.overall[(m, mid)]
            # a model that scores every image of the cohort (or of a level) alike ranks none
            # above another: said on its rank-metric rows, as the discrimination block does
            metrics.append(_row(ctx, m, cohort, column, ALL, r_all, constant_scores_note(s, mid),
                                criterion=mid))
            notes = {}
            for lv in levels:
                r = res.by_group[(m, lv, mid)]
                notes[lv] = join(_group_note(r.n, r.n_pos, r.n_neg, r.estimate, min_size),
                                 constant_scores_note(by_level[lv], mid))
                metrics.append(_row(ctx, m, cohort, column, lv, r, notes[lv], criterion=mid))
            direction = DIRECTION[mid]
            for lv in levels:
                for stat, sep in (("difference", " - "), ("ratio", " / ")):
                    r = res.to_overall[(m, lv, mid, stat)]
                    contrasts.append(_row(
                        ctx, m, cohort, column, f"{lv}{sep}all", r,
                        _contrast_note(r, stat, notes, lv),
                        criterion=f"{mid}_{stat}", contrast="to_overall", group_a=lv, group_b=ALL,
                        verdict=verdict(r.ci_low, r.ci_high, direction, n_degenerate=r.n_degenerate)
                        if stat == "difference"
                        else None, pvalue=np.nan, pvalue_adj=np.nan, significant=None))
            family = f"{NAME}|{column} pairs|{cohort}|{ctx.primary_prompt}|{m}|{mid}"
            pair_rows = []
            for i, a in enumerate(levels):
                for b in levels[i + 1:]:
                    for stat, sep in (("difference", " - "), ("ratio", " / ")):
                        r = res.between[(m, a, b, mid, stat)]
                        is_diff = stat == "difference"
                        row = _row(ctx, m, cohort, column, f"{a}{sep}{b}", r,
                                   _contrast_note(r, stat, notes, a, b), criterion=f"{mid}_{stat}",
                                   family=family if is_diff else None, contrast="between_groups",
                                   group_a=a, group_b=b,
                                   verdict=verdict(r.ci_low, r.ci_high, direction,
                                                   n_degenerate=r.n_degenerate) if is_diff
                                   else None,
                                   pvalue=bootstrap_pvalue(r.replicates) if is_diff else np.nan,
                                   pvalue_adj=np.nan, significant=None)
                        contrasts.append(row)
                        if is_diff:
                            pair_rows.append(row)
            _holm(ctx, pair_rows, family)
            for stat, method in SUMMARIES:
                r = res.summary[(m, mid, stat, method)]
                used = r.options["groups"]
                left_out = [lv for lv in levels if lv not in used]
                note = join(*(f"small group: {lv} (n={res.by_group[(m, lv, mid)].n})" for lv in used
                              if res.by_group[(m, lv, mid)].n < min_size),
                            f"left out (metric undefined): {', '.join(left_out)}" if left_out else "")
                row = _row(ctx, m, cohort, column, method, r, note,
                           criterion=f"{mid}_{stat}", n_groups=len(used))
                if method == "between_groups" and len(used) < 2:
                    # fairlearn's difference() of one group is 0 (and its ratio 1), which reads
                    # as "no disparity"; with one group there is no contrast to report
                    row.update(estimate=np.nan, ci_low=np.nan, ci_high=np.nan,
                               qualification=join(row["qualification"], f"{len(used)} level(s) "
                                                  "with the metric defined: no between-group "
                                                  "contrast"))
                summary.append(row)
    return metrics, contrasts, summary


def _holm(ctx: AuditContext, rows: list[dict], family: str) -> None:
    """Holm-adjust the between-group p-values of one family in place (undefined tests count)."""
    if not rows:
        return
    alpha = 1.0 - ctx.resampling.confidence_level
    adj = adjust_pvalues([r["pvalue"] for r in rows], method="holm", alpha=alpha,
                         nan_policy="count", family=family)
    for r, pa in zip(rows, adj.pvalues_adjusted, strict=True):
        r["pvalue_adj"] = float(pa)
        r["significant"] = bool(pa < alpha) if np.isfinite(pa) else None


# ----------------------------------------------------------------------------- the block
class Subgroups(Block):
    """Every metric per level of declared subgroup columns, with contrasts and fairlearn summaries."""

    name = NAME
    title = "Subgroups"
    summary = ("AUROC, AP, Brier, ECE15, Se@Sp95, Sp@Se95 per level of declared score-table columns "
               "(sex, age band, scanner); differences and ratios to the cohort and between levels, "
               "from one draw per cohort; fairlearn difference()/ratio()")
    config = SubgroupsConfig
    requires = ("scores",)
    tables = (
        TableSchema("metrics", "one row per cohort x subgroup column x group x model x criterion",
                    ("subgroup", "group", "estimate", "ci_low", "ci_high", "n_degenerate", "n",
                     "n_pos", "n_neg", "qualification")),
        TableSchema("contrasts", "one row per cohort x column x model x criterion x contrast "
                    "(level - all, level / all, a - b, a / b)",
                    ("subgroup", "group", "contrast", "group_a", "group_b", "estimate", "ci_low",
                     "ci_high", "n_degenerate", "verdict", "pvalue", "pvalue_adj", "significant",
                     "qualification")),
        TableSchema("summary", "fairlearn's difference() and ratio() per cohort x column x model x "
                    "criterion (between_groups, to_overall)",
                    ("subgroup", "group", "n_groups", "estimate", "ci_low", "ci_high",
                     "n_degenerate", "qualification")),
    )

    @classmethod
    def default_config(cls) -> Any:
        return []

    @staticmethod
    def columns(config: Any) -> tuple[str, ...]:
        """The declared subgroup columns of the section (short or long form)."""
        return tuple(_config(config).columns)

    @classmethod
    def spec_annotation(cls) -> Any:
        return Section

    def enabled(self, config: Any) -> bool:
        return bool(_config(config).columns)

    def multiplicity(self, config: Any) -> str | None:
        if not _config(config).columns:
            return None
        return ("Holm over the between-level differences of one subgroup column, per cohort x "
                "model x criterion (two-sided bootstrap p-values; undefined tests count); "
                "contrasts with the whole cohort, ratios and summaries descriptive")

    def provenance(self, ctx: AuditContext, config: Any) -> dict[str, Any]:
        cfg = _config(config)
        if not cfg.columns:
            return {}
        return {"columns": list(cfg.columns), "min_group_size": cfg.min_group_size,
                "missing": f"own level {MISSING!r}", "max_levels": cfg.max_levels}

    def check(self, config: Any, table: pd.DataFrame, cohorts: Sequence[str]) -> list[str]:
        from medaudit.blocks.checks import unknown

        cfg = _config(config)
        reserved = [c for c in cfg.columns if c in _RESERVED]
        errs = [f"  - subgroups: column {c!r} is part of the score table's schema, not a subgroup; "
                "name a column such as sex, age_band or scanner" for c in reserved]
        candidates = [c for c in table.columns if c not in _RESERVED]
        absent = [c for c in cfg.columns if c not in table.columns and c not in reserved]
        if candidates:
            errs += unknown("subgroup column", absent, candidates, "subgroups")
        else:  # "the table has []" read as an empty table: it has only the schema's columns
            errs += [f"  - subgroups: the table has no column {c!r}; it holds only the score "
                     f"table's own columns ({', '.join(map(str, table.columns))}), so add the "
                     "subgroup column to it" for c in absent]
        present = [c for c in cfg.columns if c in table.columns and c not in reserved]
        t = table[table["cohort"].isin(list(cohorts))]
        for c in present:
            if kinds := _mixed_kinds(t[c]):
                errs.append(f"  - subgroups: column {c!r} mixes kinds of value ({kinds}); levels "
                            "are named by their text, so 1 and '1' would merge and 1.0 stand "
                            "apart: give the column one kind (e.g. all text, "
                            "df[col].astype(str))")
                continue
            per_image = t.groupby(["cohort", "image_id"], sort=True)[c].nunique(dropna=False)
            varying = per_image[per_image > 1]
            if len(varying):
                cohort, image = varying.index[0]
                errs.append(f"  - subgroups: column {c!r} differs between the rows of image "
                            f"{image!r} in cohort {cohort!r} ({len(varying)} image(s) in all); a "
                            "subgroup is a property of the image, the same in every row")
            levels = t.drop_duplicates(["cohort", "image_id"]).groupby("cohort")[c].nunique()
            many = levels[levels > cfg.max_levels]
            if len(many):
                errs.append(f"  - subgroups: column {c!r} has {int(many.iloc[0])} levels in cohort "
                            f"{many.index[0]!r} (at most {cfg.max_levels}); bin it (e.g. age bands) "
                            "or raise `max_levels` in the long form of `subgroups:`")
        return errs

    def run(self, ctx: AuditContext, config: Any) -> BlockResult:
        cfg = _config(config)
        if not cfg.columns:
            return BlockResult(name=NAME, tables={}, notes=(
                "subgroups: the spec declares no subgroup columns; nothing to report.",))
        prompt, models = ctx.primary_prompt, ctx.models()
        metrics = _metric_specs(ctx.probabilities)
        where, cells, missing, soft = [], [], [], []
        for cohort in ctx.cohorts:
            ctx.tick(f"{NAME}: bootstrap {cohort}")
            w = ctx.wide(cohort, keys=[(m, prompt) for m in models])
            if w.label_soft is not None:
                soft.append(cohort)
            for column in cfg.columns:
                groups, n_missing = _levels(ctx, cohort, w.image_id, column)
                if n_missing:
                    missing.append(f"{column} in {cohort}: {n_missing} of {w.label.size}")
                where.append((cohort, column))
                cells.append(SubgroupCell(key=(NAME, cohort, prompt), label=w.label,
                                          scores=w.vectors(models, prompt), groups=groups,
                                          metrics=metrics, design=ctx.cohort_design(cohort)))
        results = ctx.map(functools.partial(run_subgroups, resampling=ctx.resampling), cells)
        metric_rows, contrast_rows, summary_rows = [], [], []
        for (cohort, column), res, cell in zip(where, results, cells, strict=True):
            a, b, c = _cell_rows(ctx, cohort, column, res, models, cfg.min_group_size, cell)
            metric_rows += a
            contrast_rows += b
            summary_rows += c
        tables = {"metrics": pd.DataFrame(metric_rows), "contrasts": pd.DataFrame(contrast_rows),
                  "summary": pd.DataFrame(summary_rows)}
        return BlockResult(name=NAME, tables=tables,
                           notes=tuple(_notes(ctx, cfg, tables["metrics"], missing, soft)))


def _notes(ctx: AuditContext, cfg: SubgroupsConfig, metrics: pd.DataFrame, missing: list[str],
           soft: list[str]) -> list[str]:
    level = ctx.resampling.confidence_level
    notes = [
        f"Subgroup columns {list(cfg.columns)} at prompt {ctx.primary_prompt!r}. Intervals: "
        f"percentile, level {level}, B = {ctx.resampling.n_resamples}; each cohort is resampled "
        "once with its own design (column `design`) and every metric is evaluated on the whole "
        "draw and on each level's part of it, so differences and ratios to the cohort and between "
        "levels come from the same replicates; the (all) rows are the cohort from those draws.",
        "Between-level differences: two-sided bootstrap p-values (inverted percentile interval), "
        "Holm-adjusted within each cohort x model x column x criterion (column `family`); "
        "contrasts with the cohort, ratios and the fairlearn summaries (difference: max - min or "
        "max |level - all|; ratio: min / max or the smallest level/all ratio below 1) are "
        "descriptive.",
    ]
    if not ctx.probabilities:
        notes.append("score_scale is 'logits': Brier and ECE need probabilities and are not "
                     "reported.")
    if missing:
        notes.append(f"Images without a value form the level {MISSING!r} (kept, so the levels "
                     "partition the cohort): " + "; ".join(missing) + ".")
    groups = metrics[metrics["group"] != ALL].drop_duplicates(["cohort", "subgroup", "group"])
    small = groups[groups["n"] < cfg.min_group_size]
    if len(small):
        notes.append(f"{len(small)} small group(s) (fewer than {cfg.min_group_size} images; "
                     "qualified on each row): " + ", ".join(
                         f"{r.cohort} {r.subgroup}={r.group} (n={r.n})" for r in small.itertuples())
                     + ".")
    one_class = groups[(groups["n_pos"] == 0) | (groups["n_neg"] == 0)]
    if len(one_class):
        notes.append(f"{len(one_class)} group(s) with a single class (metrics that need both "
                     "classes are NaN, never an error): " + ", ".join(
                         f"{r.cohort} {r.subgroup}={r.group} "
                         f"({'no positives' if r.n_pos == 0 else 'no negatives'})"
                         for r in one_class.itertuples()) + ".")
    if soft:
        notes.append(f"Soft labels in {', '.join(soft)} are not disaggregated by subgroup (hard "
                     "labels only).")
    defined = metrics[np.isfinite(metrics["estimate"].to_numpy(dtype=float))]
    return notes + degenerate_cells_note(int((defined["n_degenerate"] > 0).sum()))


# ----------------------------------------------------------------------------- reading back
def subgroup_rows(tables: Mapping[str, pd.DataFrame], *, model: str, cohort: str, criterion: str,
                  subgroup: str | None = None, table: str = "metrics") -> pd.DataFrame:
    """The rows of one model x cohort x criterion in a subgroups table (for claims).

    Parameters
    ----------
    tables : mapping of str to DataFrame
        The block's tables (``BlockResult.tables`` of ``subgroups``).
    model, cohort, criterion : str
        E of the rows: e.g. ``criterion="roc_auc"`` in ``metrics``,
        ``"roc_auc_difference"`` in ``contrasts`` or ``summary``.
    subgroup : str, optional
        One subgroup column (default: every column, in declared order).
    table : {"metrics", "contrasts", "summary"}, default="metrics"

    Returns
    -------
    DataFrame
        The matching rows in table order (per column, ``(all)`` first, then the levels);
        empty (with no columns) when the block did not run or wrote no such table.

    Examples
    --------
    >>> t = {"metrics": pd.DataFrame({"model": ["a", "a"], "cohort": ["c", "c"],
    ...      "criterion": ["roc_auc"] * 2, "subgroup": ["sex"] * 2, "group": ["(all)", "F"],
    ...      "estimate": [0.8, 0.7]})}
    >>> subgroup_rows(t, model="a", cohort="c", criterion="roc_auc")["group"].tolist()
    ['(all)', 'F']
    """
    df = tables.get(table)
    if df is None or df.empty:
        return pd.DataFrame()
    keep = (df["model"] == model) & (df["cohort"] == cohort) & (df["criterion"] == criterion)
    if subgroup is not None:
        keep &= df["subgroup"] == subgroup
    return df[keep]
