"""Build the :class:`~medaudit.blocks.context.AuditContext` of a spec: load, validate, check inputs.

:func:`build_context` reads every input a spec names (a score table from a file, wide
prediction files, a public dataset in place or the embedded simulation; raw
annotations; a judgment table), validates them at the door and hands the blocks a
context that carries the study, the resampling settings and the tables, but not the
spec.  :func:`make_context` does the same for tables already in memory.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any, NamedTuple

import pandas as pd

from medaudit.audit.spec import IN_MEMORY, SINGLE_COHORT, AuditSpec, ModelCard, check_spec_against_table
from medaudit.blocks import BLOCKS
from medaudit.blocks.context import AuditContext
from medaudit.exceptions import MedauditError, SchemaError
from medaudit.io.paths import resolve_input
from medaudit.io.schema import unknown_columns, validate_score_table
from medaudit.io.specfile import validate_model
from medaudit.io.tables import ID_COLUMNS, read_table

__all__ = ["Loaded", "build_context", "make_context", "load_scores", "ensemble_seeds", "spec_inputs",
           "IN_MEMORY", "SINGLE_COHORT", "data_sources"]


def _under(base_dir: Path, p: str | Path) -> Path:
    return Path(p) if Path(p).is_absolute() else base_dir / p


def spec_inputs(spec: AuditSpec, base_dir: str | Path, spec_path: str | Path | None = None
                ) -> dict[str, list[Path]]:
    """Every file or folder the spec reads, by role (an output folder may not touch any of them).

    Dataset folders read in place count as inputs too; a simulation reads nothing.
    """
    base = Path(base_dir)
    out: dict[str, list[Path]] = {}

    def add(role: str, p: str | Path | None) -> None:
        if p is not None and str(p):
            out.setdefault(role, []).append(_under(base, p))

    if spec_path is not None:
        out["audit spec"] = [Path(spec_path)]
    if spec.scores is not None and str(spec.scores) != IN_MEMORY:
        s = str(spec.scores)
        if s.startswith("dataset:"):
            add("score dataset", s[len("dataset:"):].partition(":")[2] or None)
        else:
            add("score table", s)
    for w in spec.scores_wide or ():
        add("prediction file", w.path)
    for role, key in (("score table", "scores"), ("prediction file", "scores_wide")):
        for p in out.get(role, ()):
            if p.is_dir():  # else named as the folder an --out may not lie in, not as this
                raise MedauditError(f"spec key {key}: {str(p)!r} is a folder; give the {role} "
                                    "file itself (CSV or Parquet).")
    if spec.annotations is not None:
        add("annotations", spec.annotations.path)
    j = spec.judgments
    if j is not None:
        add("judgment table", j.path)
        if j.readers is not None:
            add("reader labels", j.readers.nih_dir)
            add("reader labels", j.readers.vindr_csv)
    return out


def data_sources(spec: AuditSpec, base_dir: str | Path) -> list[dict[str, Any]]:
    """The public datasets the spec reads (name, citation, licence, url), for provenance.

    A dataset is recognised by its folder anywhere in an input path, or by the reader the
    spec names without a path (``scores: dataset:NAME``, an annotation ``format``, the
    reader judgment table, whose VinDr labels come from the torchxrayvision wheel).
    """
    from medaudit.datasets.sources import data_sources as find

    paths = [p for ps in spec_inputs(spec, base_dir).values() for p in ps]
    readers = []
    if str(spec.scores or "").startswith("dataset:"):
        readers.append(str(spec.scores)[len("dataset:"):].partition(":")[0])
    if spec.annotations is not None:
        readers.append(spec.annotations.format)
    if spec.judgments is not None and spec.judgments.readers is not None:
        readers += ["nih", "vindr"]
    return [s.to_dict() for s in find(paths, readers=readers)]


def _source(spec: AuditSpec, score_inputs: dict[str, Any]) -> str:
    """How messages name the score table: its file, the wide files, or the simulation."""
    if spec.scores_wide:
        names = [w.path for w in spec.scores_wide]
        return (f"prediction file {names[0]}" if len(names) == 1 else
                f"prediction files {', '.join(names[:3])}{' ...' if len(names) > 3 else ''}")
    if score_inputs.get("scores") == IN_MEMORY:
        return "score table (DataFrame)"
    if spec.scores is not None:
        return str(score_inputs.get("scores", spec.scores))
    return "simulated paper-000 table"


def load_scores(spec: AuditSpec, base_dir: Path, *, table: pd.DataFrame | None = None
                ) -> tuple[pd.DataFrame, dict[str, Any], AuditSpec]:
    """Return the raw score table, its input provenance and the spec (cards filled for simulations).

    ``table``: a score table already in memory (the Python API), used instead of
    ``spec.scores``; its identifier columns are read as text, as from a file.
    """
    if table is not None:
        from medaudit.io.tables import ids_as_text

        t = ids_as_text(table.copy(), tuple(c for c in ID_COLUMNS if c in table.columns))
        digest = hashlib.sha256(pd.util.hash_pandas_object(t, index=False).to_numpy().tobytes())
        return t, {"scores": IN_MEMORY, "sha256_rows": digest.hexdigest()}, spec
    if spec.simulate == "paper000":
        from medaudit.simulate import simulate_paper000

        sim = simulate_paper000(rng=spec.seed, scale=spec.simulate_scale)
        table = pd.DataFrame(sim["table"])
        if not spec.models:
            spec = spec.model_copy(update={"models": [ModelCard(**c) for c in sim["models"]]})
        return table, {"simulated": True, "generator": "medaudit.simulate.simulate_paper000",
                       "generator_seed": spec.seed, "scale": spec.simulate_scale}, spec
    from medaudit.io import file_sha256

    if spec.scores_wide is not None:
        from medaudit.io.tables import read_wide

        frames, hashes = [], []
        for w in spec.scores_wide:
            path = resolve_input(_under(base_dir, w.path), what="prediction file")
            frames.append(read_wide(path, w))
            cohort = w.cohort if w.cohort is not None else f"per row: column {w.cohort_column}"
            hashes.append({"path": w.path, "sha256": file_sha256(path), "cohort": cohort})
        return pd.concat(frames, ignore_index=True), {"scores_wide": hashes}, spec
    if str(spec.scores).startswith("dataset:"):
        # scores shipped with a public dataset (ENHANCE's algorithmic scores), read in place:
        # "dataset:NAME" (default folder under ../shared/data) or "dataset:NAME:FOLDER"
        from medaudit.datasets import dataset_scores

        name, _, folder = str(spec.scores)[len("dataset:"):].partition(":")
        table, prov = dataset_scores(name, (base_dir / folder).resolve() if folder else None)
        return table, {"scores": str(spec.scores), **prov}, spec
    path = resolve_input(_under(base_dir, spec.scores), what="score table")
    return read_table(path), {"scores": str(spec.scores), "sha256": file_sha256(path)}, spec


def ensemble_seeds(table: pd.DataFrame) -> pd.DataFrame:
    """Collapse per-seed rows into the mean-probability seed ensemble of each model."""
    key = ["model", "prompt", "cohort", "image_id"]
    other = [c for c in table.columns if c not in (*key, "score", "seed")]
    agg = table.groupby(key, sort=True).agg(score=("score", "mean"),
                                            n_seeds=("seed", "nunique"))
    meta = table.drop_duplicates(key).set_index(key)[other]
    out = agg.join(meta).reset_index()
    bad = out.groupby(["model", "cohort"])["n_seeds"].nunique()
    if (bad > 1).any():
        m, c = bad[bad > 1].index[0]
        raise SchemaError(f"model {m!r} has a different number of seeds on different images of "
                          f"cohort {c!r}; every image needs every seed to form the ensemble.")
    return out.drop(columns="n_seeds")


class Loaded(NamedTuple):
    """What :func:`build_context` returns."""

    #: what the blocks read
    context: AuditContext
    #: input provenance (files and their hashes, generators, join counts)
    inputs: dict[str, Any]
    #: the spec, with the model cards of an embedded simulation filled in
    spec: AuditSpec


def build_context(spec: AuditSpec, base_dir: str | Path = ".", *, table: pd.DataFrame | None = None
                  ) -> Loaded:
    """Load, validate and check every input the spec names; ensemble seeds when present.

    Annotations (paper 001) are aggregated to ``label`` (when the scores carry none) and
    ``label_soft`` on the score table; a judgment table (paper 002) travels beside it, and
    its uncertain-label variants when a block that runs asks for them.
    """
    base_dir = Path(base_dir)
    inputs: dict[str, Any] = {}
    if sources := data_sources(spec, base_dir):  # printed by the report and summary.md
        inputs["data_source"] = sources
    annotations = judgments = variants = None
    if spec.judgments is not None:
        from medaudit.agreement.judgments import load_judgments

        judgments, inputs["judgments"] = load_judgments(spec.judgments, base_dir, seed=spec.seed)
        if any("judgment_variants" in BLOCKS[n].wants(spec.block_config(n)) for n in spec.blocks):
            from medaudit.agreement.judgments import judgment_variants

            variants, prov = judgment_variants(spec.judgments, base_dir, seed=spec.seed)
            inputs["judgments"]["uncertain_variants"] = prov
    if not spec.has_scores:
        return Loaded(make_context(spec, scores=_EMPTY_SCORES.copy(), judgments=judgments,
                                   judgment_variants=variants), inputs, spec)
    table, score_inputs, spec = load_scores(spec, base_dir, table=table)
    inputs.update(score_inputs)
    # a table stacked from several files (monitor's period files) names itself
    source = table.attrs.get("source") or _source(spec, score_inputs)
    unknown_columns(table, source=source)  # before filling: 'Cohort' beside no cohort is refused
    if "prompt" not in table.columns:  # a model without prompts: every row at the primary one
        table = table.assign(prompt=spec.primary_prompt)
        inputs["prompt_column"] = f"absent: every row read at prompt {spec.primary_prompt!r}"
    # one site: one cohort, "all" (also when the spec names just it, as `medaudit init` writes)
    if "cohort" not in table.columns and set(spec.cohorts) <= {SINGLE_COHORT}:
        table = table.assign(cohort=SINGLE_COHORT)
        inputs["cohort_column"] = f"absent: every row in cohort {SINGLE_COHORT!r}"
    if not spec.cohorts and "cohort" in table.columns:  # not declared: every cohort, primary
        inferred = {str(c): {"role": "primary"} for c in sorted(table["cohort"].dropna().unique())}
        spec = validate_model({**spec.model_dump(mode="json", exclude_unset=True),
                               "cohorts": inferred}, AuditSpec, source=source, what="audit spec")
        inputs["cohorts_inferred"] = list(inferred)
    if spec.annotations is not None:
        from medaudit.labels.io import attach_labels, load_annotations

        annotations, inputs["annotations"] = load_annotations(spec.annotations, base_dir)
        before = _cohorts_of(table)
        table = attach_labels(table, annotations, spec.annotations, source=source)
        # what the join dropped or ignored, so results.json accounts for every item
        inputs["annotations"]["attach"] = table.attrs.get("labels", {})
        # (of the cohorts the audit reports: declared, or read from the table above)
        used = {str(c) for c in spec.cohorts} or before
        gone = sorted((before & used) - _cohorts_of(table))
        if gone:
            # probe finding: said as "the spec names an unknown cohort", which it did not
            raise SchemaError(
                f"{source}: cohort(s) {gone} of the score table have no annotated image, and "
                f"`annotations.unannotated: {spec.annotations.unannotated}` removed all their "
                "rows; annotate their images, or leave those cohorts out of the score table.")
    key = ("model", "prompt", "cohort", "image_id") + (("seed",) if "seed" in table.columns else ())
    t = validate_score_table(table, source=source, key=key,
                             probabilities=spec.score_scale == "probabilities",
                             printed=tuple(spec.study().subgroups))
    seed_scores = None
    if "seed" in t.columns:
        seed_scores = t
        t = ensemble_seeds(t)
    check_spec_against_table(spec, t, source=source,
                             cohorts_from_table="cohorts_inferred" in inputs)
    # rows of cohorts the spec does not declare take no part: listed, never dropped silently
    counts = t["cohort"].astype(str).value_counts()
    if left := {str(c): int(n) for c, n in sorted(counts.items()) if c not in set(spec.cohorts)}:
        inputs["cohorts_not_declared"] = {"rows_left_out": left, "why": (
            "the spec's `cohorts:` does not declare them; declare a cohort there to audit it")}
    declared, outside = set(spec.study().subgroups), unknown_columns(t, source=source)
    if used := [c for c in outside if c in declared]:
        inputs["subgroup_columns"] = used
    # kept, never silently ignored: listed (a declared subgroup column is used, not unknown)
    if extra := [c for c in outside if c not in declared]:
        inputs["unknown_columns"] = extra
    return Loaded(make_context(spec, scores=t, seed_scores=seed_scores, annotations=annotations,
                               judgments=judgments, judgment_variants=variants), inputs, spec)


def _cohorts_of(table: pd.DataFrame) -> set[str]:
    """The cohort names a score table holds (none before a one-site table gets its cohort)."""
    return set(table["cohort"].astype(str)) if "cohort" in table.columns else set()


def make_context(spec: AuditSpec, *, scores: pd.DataFrame | None = None, **tables: Any
                 ) -> AuditContext:
    """The context of ``spec`` over tables already validated (``seed_scores``,
    ``annotations``, ``judgments``, ``judgment_variants``, ``backend``).

    The blocks see the spec's study and resampling settings and the spec's annotation
    rules, never the spec itself.
    """
    return AuditContext(scores=_EMPTY_SCORES.copy() if scores is None else scores,
                        study=spec.study(), resampling=spec.resampling(),
                        annotation_rules=spec.annotations, **tables)


_EMPTY_SCORES = pd.DataFrame({"image_id": pd.Series(dtype=object), "cohort": pd.Series(dtype=object),
                              "model": pd.Series(dtype=object), "prompt": pd.Series(dtype=object),
                              "score": pd.Series(dtype=float), "label": pd.Series(dtype=int)})
