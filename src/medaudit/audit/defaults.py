"""The audit spec a score table implies (``medaudit summarize``), and as commented YAML (``medaudit init``).

What the table itself says is enough to audit it: every cohort (role ``primary``), the
primary prompt (the only one, or the first in sorted order), the score scale (logits
when scores are negative beyond a stray few, :func:`infer_score_scale`), one
negative-spectrum entry per cohort whose negatives name two or more groups, and the blocks those inputs allow
(:func:`default_spec`).  The result is an ordinary spec, so ``summarize`` runs the one
audit pipeline with its one validator and one provenance record.

:func:`describe_table` lists what a table says (cohorts with their sizes and classes,
models, prompts, negative groups, seeds, soft labels, the score scale, subgroup-like
columns) and :func:`starter_yaml` writes the same spec as a commented YAML file a user
edits and runs (``medaudit init SCORES.csv``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from medaudit._words import plural

__all__ = ["default_spec", "checked_table", "check_summarizable", "describe_table",
           "infer_score_scale", "yaml_flow", "starter_yaml", "TableFacts", "CohortFacts",
           "MAX_SUBGROUP_LEVELS"]


def _negative_groups(table: pd.DataFrame, cohort: str) -> list[str]:
    if "negative_group" not in table.columns or "label" not in table.columns:
        return []
    g = table.loc[(table["cohort"] == cohort) & (table["label"] == 0), "negative_group"]
    return sorted({str(v) for v in g if isinstance(v, str) and v})


def default_spec(table: pd.DataFrame, *, scores: str | Path, name: str | None = None,
                 **settings: Any) -> dict[str, Any]:
    """The spec (a mapping for :class:`~medaudit.audit.spec.AuditSpec`) that audits ``table``.

    Parameters
    ----------
    table : pandas.DataFrame
        The score table as read (its columns decide the cohorts, prompts and groups).
    scores : path
        Where the table was read from (the spec's ``scores:``).
    name : str, optional
        The audit's name (default: the file's stem).
    **settings
        Top-level keys to set as given (``seed``, ``n_resamples``, ``n_permutations``).
    """
    from medaudit.audit.spec import SINGLE_COHORT

    if "cohort" not in table.columns:  # one site: read as `medaudit audit` reads it
        table = table.assign(cohort=SINGLE_COHORT)
    if "score" not in table.columns:  # let the score-table validation name every missing column
        return {"name": name or Path(scores).stem, "scores": str(scores),
                "cohorts": {"_": {}}, **settings}
    cohorts = sorted({str(c) for c in table["cohort"]})
    prompts = sorted({str(p) for p in table["prompt"]}) if "prompt" in table.columns else ["none"]
    scale = infer_score_scale(table)
    spectrum = [{"cohort": c, "groups": g, "test": "permutation"}
                for c in cohorts if len(g := _negative_groups(table, c)) >= 2]
    blocks = ["discrimination", "operating_points"]
    if len(prompts) > 1:
        blocks.append("prompts")
    if spectrum:
        blocks.append("spectrum")
    if "seed" in table.columns:
        blocks.append("retained")
    spec: dict[str, Any] = {"name": name or Path(scores).stem, "scores": str(scores),
                            "score_scale": scale, "primary_prompt": prompts[0],
                            "cohorts": {c: {"role": "primary"} for c in cohorts},
                            "blocks": blocks, "spectrum": spectrum}
    spec.update(settings)
    return spec


def checked_table(table: pd.DataFrame, *, source: str, score_scale: str | None = None,
                  logits_hint: str = "Declare `score_scale: logits` in the spec") -> pd.DataFrame:
    """``table`` validated as ``medaudit audit`` will read it (the ScoreTable checks).

    A table without a ``prompt`` column is checked at the prompt ``none`` (and returned
    without it); one without a ``cohort`` column is one site, returned with every row in the
    cohort ``all`` (what ``medaudit audit`` does with it); the score scale is ``score_scale``
    or, when None, the one the scores imply (:func:`infer_score_scale`).  Errors name
    ``source`` and the 1-based line of a CSV.
    """
    from medaudit.audit.spec import SINGLE_COHORT
    from medaudit.io.schema import unknown_columns, validate_score_table

    unknown_columns(table, source=source)  # before the prompt is filled: 'Prompt' is refused
    raw = table if "prompt" in table.columns else table.assign(prompt="none")
    if "cohort" not in raw.columns:
        raw = raw.assign(cohort=SINGLE_COHORT)
    inferred = infer_score_scale(raw) if "score" in raw.columns else "probabilities"  # else: named below
    probabilities = (score_scale or inferred) == "probabilities"
    key = ("model", "prompt", "cohort", "image_id") + (("seed",) if "seed" in raw.columns else ())
    valid = validate_score_table(raw, source=source, key=key, probabilities=probabilities,
                                 logits_hint=logits_hint)
    return valid if "prompt" in table.columns else valid.drop(columns="prompt")


def check_summarizable(table: pd.DataFrame, *, source: str, score_scale: str | None = None
                       ) -> pd.DataFrame:
    """Refuse, in ``medaudit summarize``'s words, a table its default spec cannot audit.

    ``summarize`` has no spec, so a message must name its flag (``--score-scale``) rather
    than a spec key, and a cohort it cannot audit (one class only: the default spec takes
    every cohort of the table) must be named with what to do about it.

    Returns
    -------
    pandas.DataFrame
        The table as validated (:func:`checked_table`).

    Raises
    ------
    SchemaError
        The ScoreTable checks fail (the message names ``source`` and the line), or a cohort
        holds only positives or only negatives.
    """
    from medaudit.exceptions import SchemaError

    valid = checked_table(table, source=source, score_scale=score_scale,
                          logits_hint="Pass --score-scale logits")
    sc = valid["score"].to_numpy(dtype=np.float64)
    if score_scale == "logits" and sc.size and sc.min() >= 0.0 and sc.max() <= 1.0:
        import warnings

        # logits drop the probability metrics: a table of probabilities loses them for nothing
        warnings.warn(f"{source}: every score lies in [0, 1], as probabilities do, but "
                      "--score-scale logits was given: Brier score, ECE and AURC, which need "
                      "probabilities, are left out. Drop the flag if these are probabilities.",
                      UserWarning, stacklevel=2)
    images = valid.drop_duplicates(["cohort", "image_id"])
    for cohort, g in images.groupby("cohort", sort=True):
        if g["label"].nunique() < 2:
            only = "positives (label 1)" if int(g["label"].iloc[0]) == 1 else "negatives (label 0)"
            if "cohort" not in table.columns:  # one site: there is no cohort to leave out
                raise SchemaError(f"{source}: has only {only}, {len(g)} image(s) (no cohort column: "
                                  "one site); an audit needs positives and negatives (label 1 and "
                                  "label 0).")
            raise SchemaError(
                f"{source}: cohort {cohort!r} has only {only}, {len(g)} image(s); summarize audits "
                "every cohort of the table and each needs positives and negatives. Remove the "
                f"cohort's rows, or run `medaudit init {source}`, leave {cohort!r} out of the "
                "spec's cohorts: and run `medaudit audit` on that spec.")
    return valid


def with_subgroups(spec: dict[str, Any], valid: pd.DataFrame) -> dict[str, Any]:
    """``spec`` with the subgroup-like columns of the validated table ``valid`` under
    ``subgroups:`` and the block that reads them, as ``medaudit init`` writes them (so that
    ``summarize`` runs what ``init``'s starter spec would); unchanged when there are none or
    the spec would not accept them."""
    cols = [c for c, _ in describe_table(valid).subgroups]
    if not cols:
        return spec
    out = {**spec, "subgroups": cols, "blocks": [*spec["blocks"], "subgroups"]}
    return out if _valid(out) else spec


# --------------------------------------------------------------------------- what a table says

#: a column outside the ScoreTable schema with at most this many values (constant per image) is
#: offered as a subgroup (sex, age_band, scanner, site); more values are not groups one audits
MAX_SUBGROUP_LEVELS = 12
#: most names listed in one comment line of the starter spec (the rest are counted)
_MAX_LISTED = 10


@dataclass(frozen=True, slots=True, kw_only=True)
class CohortFacts:
    """One cohort of a score table: its images and their classes."""

    name: str
    n_images: int
    n_positive: int
    n_negative: int
    #: negative group -> number of negative images, sorted by group
    negative_groups: tuple[tuple[str, int], ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class TableFacts:
    """What a validated score table says about the audit it asks for (:func:`describe_table`)."""

    n_rows: int
    cohorts: tuple[CohortFacts, ...]
    models: tuple[str, ...]
    #: prompts in sorted order; empty when the table has no prompt column
    prompts: tuple[str, ...]
    #: training seeds in the ``seed`` column (empty: one score per model and image)
    seeds: tuple[int, ...]
    soft_labels: bool
    #: "logits" when scores are negative (beyond a stray few: :func:`infer_score_scale`)
    score_scale: str
    score_min: float
    score_max: float
    #: columns outside the schema that look like subgroups, each with its values (sorted)
    subgroups: tuple[tuple[str, tuple[str, ...]], ...]
    #: other columns outside the schema (kept by the audit, listed in its provenance, unused)
    other_columns: tuple[str, ...]
    #: optional schema columns present (``patient_id``, ``split``, ...)
    optional_columns: tuple[str, ...]


def infer_score_scale(table: pd.DataFrame) -> str:
    """``"logits"`` when finite scores are negative (beyond a stray few), else ``"probabilities"``.

    A probability is never negative, and a table of logits almost always has some (a negative
    logit is a probability below 0.5).  A handful of negatives (at most 1 %, at least one)
    among scores otherwise all in [0, 1] is a damaged table of probabilities, not logits:
    it is left to the ScoreTable check, which names the first bad row.  Scores that are all non-negative but reach above 1
    (percentages from 0 to 100, counts) are not taken for logits: they are left to the
    ScoreTable check, which refuses them as ``medaudit audit`` does, so nothing reads
    percentages as logits unless told to (``--score-scale logits``).

    Examples
    --------
    >>> infer_score_scale(pd.DataFrame({"score": [-1.5, 2.0]})), infer_score_scale(pd.DataFrame({"score": [8.5, 96.0]}))
    ('logits', 'probabilities')
    >>> infer_score_scale(pd.DataFrame({"score": [0.9, -0.01, *[0.5] * 120]}))
    'probabilities'
    """  # noqa: E501
    s = pd.to_numeric(table["score"], errors="coerce").to_numpy(dtype=np.float64)
    finite = s[np.isfinite(s)]
    if not finite.size or finite.min() >= 0:
        return "probabilities"
    n_neg = int((finite < 0).sum())
    if finite.max() <= 1.0 and n_neg <= max(1, finite.size // 100):
        # a few stray negatives among values that are otherwise all in [0, 1] (one bad row):
        # logits of a real model would put about as many below 0 as its probabilities below
        # 0.5, and almost none of the rest in [0, 1]; left to the ScoreTable check, which
        # names the row, instead of reading the whole table as logits
        return "probabilities"
    return "logits"


#: column names that usually say which institution an image came from (init's cohort hint)
_SITE_LIKE = ("site", "sites", "institution", "hospital", "center", "centre", "center_id", "site_id",
              "hospital_id", "institution_id")


def describe_table(table: pd.DataFrame) -> TableFacts:
    """What ``table`` (a validated ScoreTable) says: cohorts, models, prompts, groups, columns.

    Parameters
    ----------
    table : pandas.DataFrame
        A table returned by :func:`medaudit.io.schema.validate_score_table` (a table without
        a ``prompt`` column is described as having none).

    Returns
    -------
    TableFacts
        Cohorts sorted by name with their image and class counts (an image counts once
        however many models scored it), models and prompts sorted, the seeds, whether soft
        labels are present, the score scale, and the columns outside the schema split into
        subgroup-like ones (2 to :data:`MAX_SUBGROUP_LEVELS` values, one value per image)
        and others.

    Examples
    --------
    >>> t = pd.DataFrame({"image_id": ["1", "2", "1", "2"], "cohort": "h1",
    ...                   "model": ["a", "a", "b", "b"], "score": [0.9, 0.2, 0.7, 0.4],
    ...                   "label": [1, 0, 1, 0], "sex": ["F", "M", "F", "M"]})
    >>> f = describe_table(t)
    >>> f.models, f.prompts, f.cohorts[0].n_images, f.cohorts[0].n_positive, f.subgroups
    (('a', 'b'), (), 2, 1, (('sex', ('F', 'M')),))
    """
    from medaudit.io.schema import OPTIONAL_COLUMNS, SCORE_COLUMNS

    images = table.drop_duplicates(["cohort", "image_id"])
    cohorts = []
    for c in sorted({str(v) for v in images["cohort"]}):
        g = images[images["cohort"].astype(str) == c]
        lab = g["label"].to_numpy()
        groups = ()
        if "negative_group" in g.columns:
            neg = g.loc[(lab == 0) & (g["negative_group"] != ""), "negative_group"].astype(str)
            groups = tuple((k, int(v)) for k, v in sorted(neg.value_counts().items()))
        cohorts.append(CohortFacts(name=c, n_images=len(g), n_positive=int((lab == 1).sum()),
                                   n_negative=int((lab == 0).sum()), negative_groups=groups))
    subgroups, other = [], []
    known = set(SCORE_COLUMNS) | set(OPTIONAL_COLUMNS)
    for col in (c for c in table.columns if c not in known):
        values = table[col]
        per_image = table.assign(_v=values.astype(str)).groupby(["cohort", "image_id"])["_v"].nunique()
        levels = sorted({str(v) for v in values if not (np.ndim(v) == 0 and pd.isna(v))})
        if 2 <= len(levels) <= MAX_SUBGROUP_LEVELS and (per_image <= 1).all():
            subgroups.append((str(col), tuple(levels)))
        else:
            other.append(str(col))
    score = table["score"].to_numpy(dtype=np.float64)
    return TableFacts(
        n_rows=len(table), cohorts=tuple(cohorts), models=tuple(sorted({str(m) for m in table["model"]})),
        prompts=tuple(sorted({str(p) for p in table["prompt"]})) if "prompt" in table.columns else (),
        seeds=tuple(sorted({int(s) for s in table["seed"]})) if "seed" in table.columns else (),
        soft_labels="label_soft" in table.columns, score_scale=infer_score_scale(table),
        score_min=float(score.min()), score_max=float(score.max()), subgroups=tuple(subgroups),
        other_columns=tuple(other),
        optional_columns=tuple(c for c in OPTIONAL_COLUMNS if c in table.columns))


# --------------------------------------------------------------------------- YAML text
_PLAIN = re.compile(r"[A-Za-z_][A-Za-z0-9_.\-]*")
#: words YAML 1.1 reads as booleans or null when unquoted
_RESERVED = frozenset({"y", "n", "yes", "no", "true", "false", "on", "off", "null"})


def _yaml_str(s: str) -> str:
    """``s`` as a YAML scalar that reads back as the same text: plain when safe, else quoted."""
    if _PLAIN.fullmatch(s) and s.lower() not in _RESERVED:
        return s
    return _quoted(s)


def _shown(s: str) -> str:
    """``s`` in a comment: as it is when it is one printable item, else quoted (one line)."""
    return s if s and s.isprintable() and s.strip() == s and "," not in s else _quoted(s)


def _quoted(s: str) -> str:
    """``s`` double-quoted for YAML, escaping what could end the line or the quotes."""
    out = []
    for ch in s:
        o = ord(ch)
        if ch in '"\\':
            out.append("\\" + ch)
        elif 0x20 <= o < 0x7F or (o >= 0xA0 and not 0xD800 <= o < 0xE000
                                   and o not in (0x2028, 0x2029, 0xFEFF, 0xFFFE, 0xFFFF)):
            out.append(ch)
        else:  # control characters and YAML line breaks are escaped, so a name stays one line
            out.append(f"\\x{o:02x}" if o < 0x100 else f"\\u{o:04x}" if o < 0x10000 else f"\\U{o:08x}")
    return '"' + "".join(out) + '"'


def yaml_flow(v: Any) -> str:
    """A value in YAML flow style (text, number, true/false, null, list, mapping) that reads back
    as ``v``: text is plain where YAML 1.1 would read it as the same text, else double-quoted.

    Examples
    --------
    >>> yaml_flow({"site-1": {"role": "primary"}, "yes": [0.1, None, "a b"]})
    '{site-1: {role: primary}, "yes": [0.1, null, "a b"]}'
    """
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, str):
        return _yaml_str(v)
    if isinstance(v, Mapping):
        return "{" + ", ".join(f"{_yaml_str(str(k))}: {yaml_flow(x)}" for k, x in v.items()) + "}"
    return "[" + ", ".join(yaml_flow(x) for x in v) + "]"


def _names(names: Sequence[str]) -> str:
    shown = ", ".join(_shown(n) for n in names[:_MAX_LISTED])
    return shown + (f" and {len(names) - _MAX_LISTED} more" if len(names) > _MAX_LISTED else "")


def _cohort_line(c: CohortFacts) -> str:
    return (f"{plural(c.n_images, 'image', grouped=True)}, {c.n_positive:,} positive, "
            f"{c.n_negative:,} negative"
            + (f"; negative groups {', '.join(f'{_shown(g)} ({n:,})' for g, n in c.negative_groups)}"
               if c.negative_groups else ""))


def _facts_comment(f: TableFacts, source: str) -> list[str]:
    """The header lines listing what the table says (``#``-commented)."""
    from medaudit.audit.spec import SINGLE_COHORT

    lines = [f"What {source} holds ({plural(f.n_rows, 'row', grouped=True)}):",
             f"  {plural(len(f.models), 'model', grouped=True)}: {_names(f.models)}",
             ("  prompts: none (no prompt column: every model scores each image once)" if not f.prompts
              else f"  {plural(len(f.prompts), 'prompt', grouped=True)}: {_names(f.prompts)}"),
             f"  {plural(len(f.cohorts), 'cohort', grouped=True)}:" + (
                 " (one site: a table without a cohort column is read as cohort 'all')"
                 if [c.name for c in f.cohorts] == [SINGLE_COHORT] else "")]
    lines += [f"    {_shown(c.name)}: {_cohort_line(c)}" for c in f.cohorts[:_MAX_LISTED]]
    if len(f.cohorts) > _MAX_LISTED:
        lines.append(f"    ... and {len(f.cohorts) - _MAX_LISTED} more (all listed under cohorts:)")
    lines.append(f"  training seeds: {_names([str(s) for s in f.seeds])} (averaged into each model's "
                 "seed ensemble)" if f.seeds else "  training seeds: none (no seed column)")
    lines.append("  soft labels: label_soft (every metric also gets its soft-label twin)"
                 if f.soft_labels else "  soft labels: none (no label_soft column)")
    rng = f"from {f.score_min!r} to {f.score_max!r}"
    lines.append(f"  scores: {rng}, all in [0, 1]: probabilities" if f.score_scale == "probabilities"
                 else f"  scores: {rng}, outside [0, 1]: logits (raw model outputs)")
    if f.subgroups:
        lines.append("  subgroup-like columns: " + "; ".join(
            f"{_shown(c)} ({_names(list(v))})" for c, v in f.subgroups))
        sites = [c for c, _ in f.subgroups if c.strip().lower() in _SITE_LIKE]
        if sites and [c.name for c in f.cohorts] == [SINGLE_COHORT]:
            # only a column named cohort makes cohorts; a site column is otherwise a subgroup
            lines += [f"    ({_shown(sites[0])} may name the institution: rename the column to cohort "
                      "to audit each",
                      "    site on its own; under its own name it can only be a subgroup)"]
    if f.other_columns:
        lines.append(f"  other columns (kept, listed in the provenance, not used): "
                     f"{_names(list(f.other_columns))}")
    if ids := [c for c in f.optional_columns if c in ("patient_id", "split")]:
        lines.append(f"  also: {', '.join(ids)}")
    return lines


def starter_yaml(table: pd.DataFrame, *, scores: str, source: str | None = None,
                 name: str | None = None, command: str | None = None) -> str:
    """A commented starter audit spec for ``table``: the spec :func:`default_spec` infers, as YAML.

    The text names every key it sets with a comment saying what the key does and what was
    inferred from the table, and ends with commented-out sections worth a look (model cards,
    threshold transport between cohorts, a prevalence grid, declared claims).  It is checked
    before it is returned: read back with medaudit's YAML loader it gives the mapping intended
    and validates as an :class:`~medaudit.audit.spec.AuditSpec`.

    Parameters
    ----------
    table : pandas.DataFrame
        A validated ScoreTable (:func:`medaudit.io.schema.validate_score_table`); a table with
        no ``prompt`` column gets ``primary_prompt: none``.
    scores : str
        The spec's ``scores:`` (the table's path relative to where the spec will be written).
    source : str, optional
        How comments name the table (default: ``scores``).
    name : str, optional
        The audit's name (default: the table file's stem).
    command : str, optional
        The command that runs the spec, shown in the header.

    Returns
    -------
    str
        The YAML document (UTF-8 text ending in a newline).

    Raises
    ------
    SchemaError
        No cohort has both positives and negatives (nothing could be audited).

    Examples
    --------
    >>> t = pd.DataFrame({"image_id": ["1", "2", "1", "2"], "cohort": "h1",
    ...                   "model": ["a", "a", "b", "b"], "score": [0.9, 0.2, 0.7, 0.4],
    ...                   "label": [1, 0, 1, 0]})
    >>> text = starter_yaml(t, scores="scores.csv")
    >>> [line for line in text.splitlines() if line and not line.startswith("#")][:4]
    ['name: scores', 'scores: scores.csv', 'score_scale: probabilities', 'primary_prompt: none']
    """
    from medaudit.exceptions import SchemaError

    facts = describe_table(table)
    source = source or scores
    audited = [c for c in facts.cohorts if c.n_positive and c.n_negative]
    left_out = [c for c in facts.cohorts if not (c.n_positive and c.n_negative)]
    if not audited:
        raise SchemaError(f"{source}: no cohort has both positives and negatives "
                          f"({', '.join(f'{c.name!r}: {_cohort_line(c)}' for c in facts.cohorts[:3])}); "
                          "an audited cohort needs both classes (label 1 and label 0).")
    kept = table[table["cohort"].astype(str).isin({c.name for c in audited})]
    spec = default_spec(kept, scores=scores, name=name)
    fields = _spec_fields()
    head = [f"Audit spec for {source}, written by `medaudit init`.",
            f"Run it with:  {command or 'medaudit audit SPEC.yaml --out DIR'}",
            "Every key is described in docs/spec.md; edit freely, `#` starts a comment.", "",
            *_facts_comment(facts, source)]
    # the header names the file and the command, and a file name may hold a line break: each
    # head line stays one comment line
    from medaudit.io.schema import CONTROL

    out = [f"# {re.sub(CONTROL, '_', x)}".rstrip() for x in head] + [""]

    def key(k: str, comment: str, value: Any | None = None) -> None:
        out.extend(_comment(comment))
        out.append(f"{k}: {yaml_flow(spec[k] if value is None else value)}")

    key("name", "the audit's name (report title, results.json)")
    key("scores", "the long score table, relative to this file")
    key("score_scale", f"{facts.score_scale}: " + (
        "every score lies in [0, 1]; say logits if they are raw model outputs" if
        facts.score_scale == "probabilities" else "some scores lie outside [0, 1], so they are read "
        "as logits (calibration metrics, which need probabilities, are left out)"))
    key("primary_prompt", "the prompt the headline numbers use" + (
        "; the table has no prompt column, so every score counts as prompt `none`" if not facts.prompts
        else f"; the table has {_names(facts.prompts)} (the first in sorted order is taken)"))
    out += _comment("cohorts: every cohort the audit reports (role primary: audited on its own; "
                    "docs/spec.md describes source, extension and descriptive)")
    out.append("cohorts:")
    for c in audited:
        out.append(f"  {_yaml_str(c.name)}: {yaml_flow(spec['cohorts'][c.name])}  # {_cohort_line(c)}")
    for c in left_out:
        out.append(f"  # {_shown(c.name)} is left out ({_cohort_line(c)}): an audited cohort "
                   "needs positives and negatives")
    out += ["# models: model cards (checkpoint, revision, exposure notes) are optional, e.g.",
            "# models:", f"#   - name: {_yaml_str(facts.models[0])}",
            "#     checkpoint: where-the-weights-came-from", "#     revision: commit-or-version",
            "#     exposure: {" + _yaml_str(audited[0].name) + ": trained on part of this cohort}"]
    for k, what in (("seed", "run seed: the same seed gives byte-identical outputs"),
                    ("n_resamples", "bootstrap replicates B of every interval"),
                    ("confidence_level", "interval level")):
        key(k, what, fields[k].default)
    # subgroup columns the spec accepts are written with the block that reads them
    sub_lines = _subgroups_line(spec, facts, fields)
    blocks = spec["blocks"]
    if spec.get("subgroups") and "subgroups" not in blocks:
        blocks.append("subgroups")
    from medaudit.blocks import BLOCKS

    others = [f"{n} ({b.title})" for n, b in BLOCKS.items()
              if n not in blocks and tuple(b.requires) == ("scores",)]
    key("blocks", "the analyses to run, in this order: discrimination and operating points always, "
        "prompts with two or more prompts, spectrum with negative groups, retained with training "
        "seeds, subgroups with subgroup columns. The others that read a score table:\n"
        + "\n".join(f"  {o}" for o in others))
    if spec["spectrum"]:
        key("spectrum", "negative spectrum: positives against each named negative group "
            "(from the negative_group column)")
    elif any(len(c.negative_groups) == 1 for c in audited):
        out.append("# spectrum: a cohort needs two or more negative groups to compare them")
    out += sub_lines
    if len(audited) >= 2:
        src, rest = audited[0].name, [c.name for c in audited[1:]]
        out += [*_comment("transport: thresholds chosen on one cohort, carried unchanged to the "
                          "others (add transport to blocks:)"),
                "# transport:", f"#   - source: {_yaml_str(src)}",
                f"#     targets: {yaml_flow(rest)}", "#     rules: [sensitivity, specificity]"]
    out += [*_comment("prevalence: score error (Brier, ECE, log loss) at other prevalences (add "
                      "prevalence to blocks:)"),
            "# prevalence:", f"#   - cohorts: {yaml_flow([c.name for c in audited])}",
            "#     grid: [0.05, 0.1, 0.2]", "#     primary: 0.1",
            "# claims: the claims to check; see docs/spec.md"]
    text = "\n".join(out) + "\n"
    _check_starter(text, spec, source)
    return text


def _comment(text: str, width: int = 96) -> list[str]:
    """``text`` as ``#`` lines of at most ``width`` characters (a line of ``text`` starting with
    spaces is kept as it is: a list item)."""
    import textwrap

    out = []
    for para in text.split("\n"):
        if para.startswith(" "):
            out.append(f"# {para}")
        else:
            out += [f"# {x}" for x in textwrap.wrap(para, width, break_long_words=False,
                                                   break_on_hyphens=False)]
    return out


def _spec_fields() -> dict[str, Any]:
    from medaudit.audit.spec import AuditSpec

    return dict(AuditSpec.model_fields)


def _subgroups_line(spec: dict[str, Any], facts: TableFacts, fields: dict[str, Any]) -> list[str]:
    """``subgroups: [...]`` when the spec has that key and accepts the columns; else a comment."""
    if not facts.subgroups:
        return []
    cols = [c for c, _ in facts.subgroups]
    line = f"subgroups: {yaml_flow(cols)}"
    comment = "subgroups: metrics per subgroup (columns of the table with a few values each)"
    if "subgroups" in fields and _valid({**spec, "subgroups": cols}):
        spec["subgroups"] = cols
        return [*_comment(comment), line]
    return [*_comment(comment + "; not yet a key of this medaudit version"), f"# {line}"]


def _valid(raw: dict[str, Any]) -> bool:
    from pydantic import ValidationError

    from medaudit.audit.spec import AuditSpec

    try:
        AuditSpec.model_validate(raw)
    except (ValidationError, ValueError):
        return False
    return True


def _check_starter(text: str, spec: dict[str, Any], source: str) -> None:
    """The starter reads back as the spec intended and is valid (anything else is a bug here)."""
    from medaudit.audit.spec import AuditSpec
    from medaudit.io.specfile import validate_model
    from medaudit.io.yaml import load_yaml_text

    what = f"the starter spec for {source}"
    back = validate_model(load_yaml_text(text, source=what, what="audit spec"), AuditSpec,
                          source=what, what="audit spec")
    if back != validate_model(spec, AuditSpec, source=what, what="audit spec"):
        raise RuntimeError(f"medaudit bug: {what} does not read back as the spec intended; "
                           "please report it with the table's column names")
