"""The receiving site: a published audit's claims re-evaluated on local data (``medaudit port``).

``medaudit.port(source, local, *, spec=None, **options) -> PortResult``::

    import medaudit
    res = medaudit.port("vendor.claims.json", "site_scores.csv")
    res.claims            # one row per source claim: source and local estimate, verdict
    res.write("port-out") # port__claims.csv, port.json, summary.md, report.html

``source`` is a finished audit (a folder or its ``results.json``) or a claims file
(:mod:`medaudit.io.claimsfile`; an unknown schema version, a tampered file or one the
schema rejects is refused with one line).  ``local`` is the site's score table (a
DataFrame or a CSV/Parquet path), or None when ``spec`` names it; ``spec`` is an audit
spec of the local data (a YAML path or a mapping) and ``options`` override its keys.

Every source claim is re-stated as a declared claim (:mod:`medaudit.blocks.claims`) with
the change made explicit and judged by the ``claims`` block on the local data (its own
paired bootstrap, the local cohort's design, the run's B and seed) — there is no second
evaluator:

* the cohort becomes the site's (``cohort=`` when the local data has several);
* the prevalence of a prevalence-dependent metric (Brier, log loss, ECE) becomes the
  site's observed one, or ``prevalence=`` when declared;
* a source threshold is carried as a **fixed number** (τ from the claims file, never
  re-estimated); ``thresholds="local"`` chooses it again on the local data by the source
  claim's declared rule (a rate it was chosen for then holds by construction);
* the prompt and the negatives stay the source's.

Generated claims are re-stated by kind: ``reliability`` (AUROC ≥ L) as a level claim,
``ranking`` (A ranks above B) as a comparison, ``operating constraint`` (Se or Sp ≥ x at
τ) as an operating-point claim at the source's τ.  A claim that cannot be judged on the
local data gets the verdict "not assessable here" and the reason (a model or prompt
absent locally, one class only, a kind that compares the source's cohorts or
estimators).  For every unresolved claim, the local positives and negatives that would
resolve it at the observed effect come from :func:`medaudit.blocks.planning.plan_claims`
(the half-width rule at ``power``; the exact Clopper-Pearson size for a rate).
"""

from __future__ import annotations

import copy
import math
import os
import re
import sys
import types
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import pandas as pd

__all__ = ["port", "PortResult", "PORT_COLUMNS", "load_local", "LocalData", "restate", "site_cohort",
           "present_models", "source_provenance", "source_row"]

#: columns of ``port__claims.csv`` (the first table of the report)
PORT_COLUMNS = (
    "claim_id", "claim", "kind", "model", "prompt", "criterion", "threshold", "threshold_origin",
    "level", "side", "changes", "source_cohort", "local_cohort", "source_prevalence",
    "local_prevalence", "source_estimate", "source_ci_low", "source_ci_high", "source_verdict",
    "source_n_pos", "source_n_neg", "local_estimate", "local_ci_low", "local_ci_high",
    "other_criterion", "other_estimate", "other_ci_low", "other_ci_high", "verdict",
    "reason", "local_n_pos", "local_n_neg", "resolves_to", "resolve_n_pos", "resolve_n_neg",
    "additional_pos", "additional_neg", "exact_additional", "plan_rule", "design", "n_resamples",
    "seed", "family", "confidence_level")
#: claims-block verdicts that mean the local data could not judge the claim
_UNJUDGED = ("not defined", "not assessed")
FAMILY = "port: each claim judged by its own interval at the run's level; no adjustment across claims"


# ----------------------------------------------------------------------------- local data
@dataclass(frozen=True, eq=False)
class LocalData:
    """The site's data as the audit machinery reads it: spec mapping, folder, table, context."""

    raw: dict[str, Any]
    base: Path
    table: pd.DataFrame | None
    spec_path: Path | None
    scores: pd.DataFrame
    cohorts: tuple[str, ...]
    primary_prompt: str
    #: the validated spec and the input provenance (files and hashes) of the local data
    spec: Any = None
    inputs: dict[str, Any] = field(default_factory=dict)
    #: rows whose label is not known yet (``keep_unlabelled=True``): scores for drift only
    unlabelled: pd.DataFrame | None = None


def load_local(data: Any = None, *, spec: Any = None, blocks: Sequence[str] = ("claims",),
               keep_unlabelled: bool = False, **options: Any) -> LocalData:
    """Read and validate the local data once (what :func:`port` and ``monitor`` re-state claims on).

    ``data``, ``spec`` and ``options`` are those of :func:`medaudit.audit`; the spec's own
    ``claims:`` section is dropped (the source's claims are judged) and only ``blocks`` run.
    ``keep_unlabelled``: rows whose label is empty (not known yet) are set aside in
    ``unlabelled`` instead of being refused (``medaudit monitor``: their scores count for
    drift); the labelled rows are validated as the audit validates a table.
    """
    from medaudit.api import _spec_mapping, _with_data
    from medaudit.audit.context import build_context, load_scores
    from medaudit.audit.spec import AuditSpec
    from medaudit.blocks.checks import unknown
    from medaudit.io.specfile import validate_model

    raw, base = _spec_mapping(spec)
    no_claims_option(options)
    raw = {**raw, **options}
    table = None
    if data is not None:
        raw, table = _with_data(raw, data, noun="local data")
    own = raw.pop("claims", None)
    raw["blocks"] = list(blocks)
    where = str(spec) if isinstance(spec, (str, os.PathLike)) else "the local data options"
    if isinstance(own, Mapping) and own.get("declared"):
        import warnings

        # the site's own declared claims would vanish without a word: say where they run
        warnings.warn(f"{where}: its {len(own['declared'])} declared claim(s) under `claims:` "
                      "are not judged here (a port or a monitor judges the source's claims); "
                      "run `medaudit audit` on this spec for them.", UserWarning, stacklevel=3)
    if options:  # a bad value may be an option given here, not a key of the spec file
        where += f" with the options {', '.join(f'{k}={v!r}' for k, v in options.items())}"
    s = validate_model(raw, AuditSpec, source=where, what="audit spec")
    spec_path = Path(spec) if isinstance(spec, (str, os.PathLike)) else None
    scores, inputs, s = load_scores(s, base, table=table)
    unlabelled = None
    if keep_unlabelled and "label" in scores.columns:
        from medaudit.audit.context import _source
        from medaudit.io.schema import take_rows

        late = (scores["label"].isna() | (scores["label"].astype(str).str.strip() == "")).to_numpy()
        # the labelled rows are validated below as a table in memory: they keep their labels
        # as written and their file and line, so a bad label is named as the user wrote it
        scores.attrs.setdefault("source", _source(s, inputs))
        unlabelled = take_rows(scores, late)
        scores = take_rows(scores, ~late)
        table = scores
        if len(unlabelled):
            _check_unlabelled(unlabelled, s)
    if "label" in scores.columns:
        scores = with_keys(scores, prompt=s.primary_prompt)
        in_table = sorted(scores["cohort"].dropna().astype(str).unique())
        named = list(s.cohorts) or in_table
        if errs := unknown("cohort", s.cohorts, in_table, "cohorts"):
            # a cohort the table lacks has no class at all: it must not read as a one-class
            # site (every claim "not assessable", blamed on absent models), but be refused as
            # the audit refuses it
            from medaudit.audit.context import _source
            from medaudit.exceptions import SchemaError

            where = scores.attrs.get("source") or _source(s, inputs)
            raise SchemaError(f"{where}: the audit spec names what this score table lacks (fix "
                              "the spec keys below, or the table):\n" + "\n".join(errs))
        lab = pd.to_numeric(scores["label"], errors="coerce")
        classes = lab.groupby(scores["cohort"].astype(str)).nunique()
        if any(classes.get(c, 0) < 2 for c in named):
            # a one-class cohort cannot be audited, but its claims are answered: "not
            # assessable here" with the reason (the table as read, with its class counts).
            # The table is validated as an audit's is first: labels written 'TB'/'normal'
            # read as no class at all, and a missing column must be named, not a KeyError
            from medaudit.audit.context import _source
            from medaudit.io.schema import validate_score_table

            key = ("model", "prompt", "cohort", "image_id") + (
                ("seed",) if "seed" in scores.columns else ())
            scores = validate_score_table(scores, source=scores.attrs.get("source") or _source(s, inputs),
                                          key=key, probabilities=s.score_scale == "probabilities")
            return LocalData(raw=raw, base=base, table=table, spec_path=spec_path, scores=scores,
                             cohorts=tuple(named), primary_prompt=s.primary_prompt, spec=s,
                             inputs=inputs, unlabelled=unlabelled)
    ctx, built, s = build_context(s, base, table=table)
    if unlabelled is None:
        inputs = built
    elif "cohorts_not_declared" in built:  # rows the run leaves out are listed either way
        inputs = {**inputs, "cohorts_not_declared": built["cohorts_not_declared"]}
    return LocalData(raw=raw, base=base, table=table, spec_path=spec_path, scores=ctx.scores,
                     cohorts=tuple(ctx.cohorts), primary_prompt=s.primary_prompt, spec=s,
                     inputs=inputs, unlabelled=unlabelled)


def no_claims_option(options: dict[str, Any]) -> None:
    """Refuse ``claims=`` among a port's or a monitor's options: the source's claims are what is
    checked there, and claims given here would be dropped without a word."""
    from medaudit.exceptions import MedauditError

    if "claims" in options:
        raise MedauditError("claims= is not an option of a port or a monitor: the source's claims "
                            "are re-stated at the site. Declare extra claims in an audit of the "
                            "local data (medaudit.audit(..., claims=[...])).")


def with_keys(rows: pd.DataFrame, *, prompt: str, cohort: str | None = None) -> pd.DataFrame:
    """``rows`` with the ``cohort`` and ``prompt`` columns a one-site, one-prompt table may leave
    out (default cohort: the one site, :data:`~medaudit.audit.spec.SINGLE_COHORT`)."""
    from medaudit.audit.spec import SINGLE_COHORT

    if "cohort" not in rows.columns:
        rows = rows.assign(cohort=SINGLE_COHORT if cohort is None else cohort)
    if "prompt" not in rows.columns:
        rows = rows.assign(prompt=prompt)
    return rows


def _check_unlabelled(rows: pd.DataFrame, spec: Any) -> None:
    """The rows without a label yet, checked as the labelled ones are (scores, names, one row
    per image and model), their label aside: they feed the drift of every period."""
    from medaudit.io.schema import validate_score_table

    probe = with_keys(rows.assign(label=0), prompt=spec.primary_prompt)
    probe.attrs = dict(rows.attrs)  # the rows keep their file and line in the messages
    key = ("model", "prompt", "cohort", "image_id") + (("seed",) if "seed" in probe.columns else ())
    validate_score_table(probe, source=f"{rows.attrs.get('source', 'score table')} (rows without "
                         "a label yet)", key=key, probabilities=spec.score_scale == "probabilities")


def site_cohort(local: LocalData, cohort: str | None) -> str:
    from medaudit.exceptions import MedauditError

    if cohort is not None:
        if cohort not in local.cohorts:
            raise MedauditError(f"cohort {cohort!r} is not in the local data; it has "
                                f"{list(local.cohorts)}. Name one of them with --cohort.")
        return cohort
    if len(local.cohorts) == 1:
        return local.cohorts[0]
    raise MedauditError(f"the local data has {len(local.cohorts)} cohorts {list(local.cohorts)}; "
                        "name the site's with --cohort (cohort= in Python).")


# ----------------------------------------------------------------------------- re-stating
def present_models(scores: pd.DataFrame, cohort: str) -> dict[str, set[str]]:
    """model -> prompts it has on the local cohort."""
    sub = scores.loc[scores["cohort"] == cohort, ["model", "prompt"]].drop_duplicates()
    out: dict[str, set[str]] = {}
    for m, p in sub.itertuples(index=False):
        out.setdefault(str(m), set()).add(str(p))
    return out


def _generated(c: Mapping[str, Any]) -> dict[str, Any] | str:
    """A generated claim as a declared one, or why it has no local counterpart."""
    kind, e, level, side = c["kind"], c["E"], c.get("level"), c.get("side")
    crit = str(e["criterion"])
    if crit.startswith("soft_"):
        # judged against the source's soft labels (its readers' disagreement): a port re-states
        # claims on the ordinary metric, with the site's labels, so it has no counterpart
        return (f"the source claim is about {crit.removesuffix('_difference')}, a metric against "
                "the source's soft labels (its readers' disagreement); a port judges ordinary "
                "metrics on the site's labels")
    if kind in ("reliability", "level"):  # a hand-written file may leave `declared` empty
        if level is None:
            return "the source claim names no level to judge against"
        key = "at_least" if side != "less" else "at_most"
        return {"kind": "level", "model": e["model"], "metric": crit, key: level}
    if kind in ("ranking", "comparison") and len(c.get("models") or ()) == 2:
        a, b = c["models"]
        return {"kind": "comparison", "model": a, "than": b, "metric": crit.removesuffix("_difference")}
    if kind in ("operating constraint", "operating point"):
        if crit not in ("sensitivity", "specificity") or level is None:
            return ("a cut-point rule's claim ('keeps the source's sensitivity and specificity') "
                    "names no level a site can check")
        if e.get("threshold") is None:
            return "the source threshold is not a finite number (see the source qualification)"
        return {"kind": "operating_point", "model": e["model"], f"{crit}_at_least": level,
                "threshold": e["threshold"]}
    return (f"claims of kind {kind!r} compare the source audit's own cohorts, prompts or "
            "estimators; there is no local counterpart to judge")


def restate(c: Mapping[str, Any], *, cohort: str, present: Mapping[str, set[str]],
            primary_prompt: str, negative_groups: set[str], n_pos: int, n_neg: int,
            prevalence: float | None = None, thresholds: str = "source",
            source_scale: str | None = "probabilities", local_scale: str = "probabilities"
            ) -> tuple[dict[str, Any] | str, str]:
    """A source claim as a declared claim on the local cohort, and the threshold's origin.

    Returns ``(claim mapping, threshold origin)``, or ``(reason, "")`` when the claim cannot
    be judged here.  The mapping is the ``claims.declared`` vocabulary with ``changes: []``
    (the claim at its E only), the cohort replaced by the site's, the source prompt and
    negatives kept, a threshold as the source's number (``thresholds="local"``: chosen
    again on the site by the declared rule) and a π-dependent metric at ``prevalence``
    (None: the site's observed).  A fixed source τ is carried to the site's score scale
    (``source_scale`` -> ``local_scale``: logit or expit; None: the claims file does not say,
    and τ is read on the local scale, which the origin says).
    """
    from pydantic import TypeAdapter, ValidationError

    from medaudit.blocks.claims import DeclaredClaim
    from medaudit.stats.metric_ids import depends_on_prevalence, metric_spec

    d: dict[str, Any] | str = copy.deepcopy(dict(c["declared"])) if c.get("declared") else \
        _generated(c)
    if isinstance(d, str):
        return d, ""
    e = c["E"]
    d.pop("cohort", None)
    d.update(id=c["id"], text=c["text"] or None, cohort=cohort, changes=[],
             prompt=e.get("prompt") or primary_prompt)
    models = [m for m in (d.get("order") or [d.get("model"), d.get("than")]) if m]
    for m in models:
        if m not in present:
            alike = [p for p in present if _name_key(p) == _name_key(m)]
            hint = (f"; the local data has {alike[0]!r}: if it is the same model, give it the "
                    f"source's name {m!r} in the local table") if alike else ""
            return f"model {m} is absent from the local data (cohort {cohort}){hint}", ""
        if d["prompt"] not in present[m]:
            return f"prompt {d['prompt']} of {m} is absent from the local data", ""
    neg = d.get("negatives") or "all"
    if neg != "all" and neg not in negative_groups:
        return f"the negative group {neg!r} is absent from the local data", ""
    if n_pos == 0 or n_neg == 0:
        return (f"the local cohort {cohort} has one class only ({n_pos} positives, {n_neg} "
                "negatives)"), ""
    origin = ""
    if d.get("kind") == "operating_point":
        t = d.get("threshold")
        if isinstance(t, Mapping):  # chosen by a rule on the source
            if thresholds == "local":
                d["threshold"] = {**t, "source": cohort, "design": "fixed"}
                origin = f"re-estimated on {cohort} by the source rule ({t.get('rule')})"
            elif e.get("threshold") is None:
                return "the source threshold is not a finite number", ""
            else:
                d["threshold"] = float(e["threshold"])
                origin = f"source τ (chosen on {t.get('source')} by {t.get('rule')}), fixed"
        elif t is not None:
            origin = "source τ, fixed"
            if thresholds == "local":
                origin += " (a number in the source claim: no rule to choose it again)"
        if not isinstance(d.get("threshold"), Mapping) and d.get("threshold") is not None:
            tau, why = _on_local_scale(float(d["threshold"]), source_scale, local_scale)
            if tau is None:
                return why, ""
            d["threshold"] = tau
            origin = f"{origin}; {why}" if why else origin
    elif "metric" in d:
        try:
            name = metric_spec(d["metric"], d.get("options") or {}).name
        except Exception as exc:  # noqa: BLE001 - a metric this medaudit does not know
            return f"the metric {d['metric']!r} is not known here ({exc})", ""
        if depends_on_prevalence(name):
            d["prevalence"] = prevalence
    try:
        TypeAdapter(DeclaredClaim).validate_python(d)
    except ValidationError as exc:
        err = exc.errors()[0]
        # pydantic's own words are not the user's: the tag of a union member ("~level") and
        # the "Value error, " a validator's message is prefixed with
        at = ".".join(str(x) for x in err.get("loc", ())
                      if not isinstance(x, int) and not str(x).startswith("~"))
        msg = re.sub(r"^(Value|Assertion) error, ", "", str(err["msg"]))
        return f"the claim cannot be re-stated here: {at + ': ' if at else ''}{msg}", ""
    return d, origin


def _name_key(name: str) -> str:
    """A model name with case, spaces, ``_`` and ``-`` folded (to spot ``A`` for ``a``)."""
    return re.sub(r"[\s_-]+", "-", str(name).strip().casefold())


def _on_local_scale(tau: float, source: str | None, local: str) -> tuple[float | None, str]:
    """A source threshold as a number on the site's score scale, and what was done, in words.

    ``(None, reason)`` when it cannot be carried (a probability outside (0, 1) has no logit).
    """
    if local == "probabilities" and not 0.0 <= tau <= 1.0 and source != "logits":
        # not a probability: a logit from a file that does not say so, or a hand edit
        said = ("the claims file does not record its score scale" if source is None
                else "the claims file says the source scored probabilities")
        return None, (f"the source τ = {tau:g} lies outside [0, 1] and {said}, so it cannot "
                      "be read on this site's probabilities; ask the claims file's producer "
                      "which scale τ is on (a file that records `source.score_scale` is carried "
                      "over), or re-estimate a rule-chosen τ here (--reestimate-thresholds)")
    if source is None:
        return tau, (f"the claims file does not record its score scale: τ read on the local "
                     f"{local}")
    if source == local:
        return tau, ""
    if source == "probabilities":  # to logits
        if not 0.0 < tau < 1.0:
            return None, (f"the source τ = {tau:g} is a probability with no logit, and the local "
                          "scores are logits")
        return math.log(tau / (1.0 - tau)), f"τ = {tau:g} on probabilities, logit(τ) on the local logits"
    # expit in the form that cannot overflow for a large negative logit
    p = 1.0 / (1.0 + math.exp(-tau)) if tau >= 0 else math.exp(tau) / (1.0 + math.exp(tau))
    return p, f"τ = {tau:g} on logits, expit(τ) on the local probabilities"


# ----------------------------------------------------------------------------- the result
#: what a file of a port or monitor folder holds: a table (written as CSV), text or bytes
SiteFile = pd.DataFrame | str | bytes


def write_site_folder(directory: str | os.PathLike[str], files: Callable[[], Mapping[str, SiteFile]],
                      *, what: str, source: Mapping[str, Any], provenance: Mapping[str, Any],
                      inputs: Mapping[str, list[Path]], overwrite: bool,
                      folders: Sequence[str] = ()) -> Path:
    """Write the folder of a ``port`` or ``monitor`` run atomically (a failed run leaves nothing).

    Parameters
    ----------
    directory : path
        The output folder; never an audit folder, and an existing one only with
        ``overwrite`` when medaudit wrote it.
    files : callable
        Returns the run's files, relative name to content (a DataFrame is written as CSV,
        ``str`` as UTF-8 text, ``bytes`` as they are); ``source.claims.json`` is added.
        Called only after ``directory`` is accepted, so that a refused ``--out`` is said at
        once rather than after the figures and the page are rendered.
    what : {"port", "monitor"}
        The run's kind: its name in messages and its options' key in ``provenance``.
    source : mapping
        The claims document as checked.
    provenance : mapping
        ``{"source": ..., "local": ..., what: options}``.
    inputs : mapping
        The run's input files, which the folder may not replace or hold.
    overwrite : bool
        Replace an existing folder medaudit wrote.
    folders : sequence of str, optional
        Sub-folders created even when no file goes in them (``figures``).

    Returns
    -------
    Path
        ``directory``.
    """
    from medaudit.io.claimsfile import sha256_of
    from medaudit.io.output import atomic_directory, check_not_audit, check_output_dir, json_text, write_csv

    check_not_audit(directory, what=what)
    check_output_dir(directory, inputs=inputs, overwrite=overwrite)
    contents = {**files(), "source.claims.json": json_text(source) + "\n"}
    # the same source, local inputs and options give the same marker, so a rerun is byte-identical
    run_id = sha256_of({"source": source["integrity"]["value"],
                        "local": provenance["local"].get("inputs"), what: provenance[what]})[:16]
    with atomic_directory(directory, overwrite=overwrite, inputs=inputs, run_id=run_id) as tmp:
        for name in folders:
            (tmp / name).mkdir()
        for name, content in contents.items():
            if isinstance(content, pd.DataFrame):
                write_csv(content, tmp / name, sync=False)  # the folder is synced once, when sealed
            elif isinstance(content, bytes):
                (tmp / name).write_bytes(content)
            else:
                (tmp / name).write_text(content, encoding="utf-8")
    return Path(directory)


@dataclass(frozen=True, eq=False)
class PortResult:
    """The source claims judged on the local data.

    Attributes
    ----------
    claims : DataFrame
        One row per source claim (:data:`PORT_COLUMNS`), in the source's order: the source
        estimate and interval beside the local ones, the verdict and its reason, and for an
        unresolved claim the local positives and negatives that would resolve it.
    source : dict
        The claims document (as read, or exported from the source audit).
    provenance : dict
        ``{"source": ..., "local": ..., "port": options}``: both provenances side by side.
    local_matrix : DataFrame
        The local claims block's rows (the portability-matrix columns).
    """

    claims: pd.DataFrame = field(repr=False)
    source: dict[str, Any] = field(repr=False)
    provenance: dict[str, Any] = field(repr=False)
    local_matrix: pd.DataFrame = field(repr=False)
    _inputs: dict[str, list[Path]] = field(repr=False, default_factory=dict)

    def summary(self) -> str:
        """summary.md: the claims table first, then both provenances."""
        from medaudit.report.port import port_summary

        return port_summary(self.claims, self.provenance)

    def html(self) -> str:
        """report.html: a self-contained page opening on the claims table."""
        from medaudit.report.port import port_page

        return port_page(self.claims, self.provenance)

    def write(self, directory: str | os.PathLike[str], *, overwrite: bool = False) -> Path:
        """Write ``port__claims.csv``, ``port.json``, ``source.claims.json``, ``summary.md`` and
        ``report.html`` into ``directory``, atomically (a failed run leaves nothing), over an
        existing folder only with ``overwrite=True`` when medaudit wrote it."""
        from medaudit.io.output import json_text

        def files() -> dict[str, SiteFile]:
            return {"port__claims.csv": self.claims,
                    "port.json": json_text({
                        "claims": self.claims.to_dict("records"), "provenance": self.provenance,
                        "local_matrix": self.local_matrix.to_dict("records")}) + "\n",
                    "summary.md": self.summary(), "report.html": self.html()}

        return write_site_folder(directory, files, what="port", source=self.source,
                                 provenance=self.provenance, inputs=self._inputs, overwrite=overwrite)

    def __repr__(self) -> str:
        counts = self.claims["verdict"].value_counts().to_dict() if len(self.claims) else {}
        return f"<medaudit.PortResult: {len(self.claims)} source claims, {counts}>"


def _num(v: Any) -> float:
    try:
        f = float(v)
    except (TypeError, ValueError):
        return math.nan
    return f


def _pi_dependent(d: Any) -> bool:
    """Whether a re-stated claim's metric depends on prevalence (its π is then the site's)."""
    from medaudit.stats.metric_ids import depends_on_prevalence, metric_spec

    if not isinstance(d, Mapping) or "metric" not in d:
        return False
    return depends_on_prevalence(metric_spec(d["metric"], d.get("options") or {}).name)


def _changes(src_cohort: Any, cohort: str, c: Mapping[str, Any], d: Any, local_pi: float,
             origin: str) -> str:
    """The changes of E made explicit, in words."""
    parts = [f"cohort {src_cohort} → {cohort} (the site)"]
    if _pi_dependent(d):
        src = c["E"].get("prevalence")
        if d.get("prevalence") is None:
            parts.append(f"prevalence {src} → the site's observed ({local_pi:.6g})")
        else:
            parts.append(f"prevalence {src} → declared {float(d['prevalence']):g}")
    if origin:
        parts.append(f"threshold: {origin}")
    return "; ".join(parts)


def _rate_of(criterion: Any) -> str:
    """The rate an operating point's criterion constrains (``specificity[threshold=0.5]`` and
    ``specificity`` are one rate; Se at a specificity is a sensitivity)."""
    base = str(criterion).split("[", 1)[0]
    return "sensitivity" if base == "sensitivity_at_specificity" else base


def source_row(c: Mapping[str, Any], *, site: str, origin: str, **values: Any) -> dict[str, Any]:
    """The :data:`PORT_COLUMNS` row of a source claim: its E and source numbers (local ones empty)."""
    e = c["E"]
    row = dict.fromkeys(PORT_COLUMNS)
    row.update(claim_id=c["id"], claim=c["text"], kind=c["kind"], model=e["model"],
               prompt=e.get("prompt"), criterion=e["criterion"], threshold=e.get("threshold"),
               threshold_origin=origin, level=c.get("level"), side=c.get("side"),
               source_cohort=e.get("cohort"), local_cohort=site,
               source_prevalence=e.get("prevalence"), source_estimate=c.get("estimate"),
               source_ci_low=c.get("ci_low"), source_ci_high=c.get("ci_high"),
               source_verdict=c.get("verdict"), source_n_pos=c.get("n_pos"),
               source_n_neg=c.get("n_neg"), **values)
    return row


def source_provenance(doc: Mapping[str, Any], source_file: Path) -> dict[str, Any]:
    """What the source claims came from: file, audit name, data, digests, producer, cohorts."""
    src = doc["source"]
    return {"file": str(source_file), "name": src.get("name"), "data_source": src.get("data_source"),
            "spec_digest": src.get("spec_digest"), "content_hash": doc["content_hash"]["value"],
            "integrity": doc["integrity"]["value"], "schema_version": doc["schema_version"],
            "producer": doc["producer"], "confidence_level": src.get("confidence_level"),
            "cohorts": src.get("cohorts")}


def port(source: str | os.PathLike[str], local: Any = None, /, *, spec: Any = None,
         cohort: str | None = None, prevalence: float | None = None,
         thresholds: Literal["source", "local"] = "source", power: float | None = 0.8,
         **options: Any) -> PortResult:
    """Re-evaluate every claim of a published audit on local data.

    Parameters
    ----------
    source : path
        An audit folder written by ``medaudit audit``, its ``results.json``, or a claims file.
    local : DataFrame or path, optional
        The site's score table; optional when ``spec`` names its inputs.
    spec : path or mapping, optional
        An audit spec of the local data (cohorts, primary prompt, B, seed, ...).
    cohort : str, optional
        The site's cohort in the local data (required when it has several).
    prevalence : float, optional
        The prevalence π-dependent claims are judged at (default: the site's observed).
    thresholds : {"source", "local"}, default="source"
        ``source``: every threshold is the source's number, fixed.  ``local``: a threshold the
        source chose by a declared rule is chosen again on the local data by that rule.
    power : float, optional
        Chance that the interval resolves an unresolved claim at the planned sample, in
        [0.5, 1) (None: even odds), as ``medaudit plan``.
    **options
        Spec keys of the local run (``n_resamples=500``, ``seed=1``).

    Returns
    -------
    PortResult

    Examples
    --------
    >>> import numpy as np, pandas as pd, tempfile, medaudit
    >>> rng = np.random.default_rng(0)
    >>> def site(n, shift):
    ...     y = np.repeat([1, 0], n)
    ...     return pd.DataFrame({"image_id": [f"i{i}" for i in range(2 * n)], "model": "a",
    ...                          "label": y, "score": shift * y + rng.uniform(0, 0.4, 2 * n)})
    >>> with tempfile.TemporaryDirectory() as d:
    ...     _ = medaudit.audit(site(60, 0.3), n_resamples=200, claims=[
    ...         {"model": "a", "metric": "roc_auc", "at_least": 0.7}]).write(f"{d}/audit")
    ...     res = medaudit.port(f"{d}/audit", site(60, 0.02), n_resamples=200)
    >>> res.claims[["claim_id", "source_verdict", "verdict"]].to_dict("records")
    [{'claim_id': 'D01', 'source_verdict': 'holds', 'verdict': 'does not hold'}]
    """
    from medaudit.audit.context import spec_inputs
    from medaudit.audit.run import audit as run_audit
    from medaudit.audit.run import versions
    from medaudit.blocks.planning import check_plan_power

    no_claims_option(options)
    power = check_plan_power(power)  # before the local audit runs, not after
    from medaudit.audit.spec import AuditSpec
    from medaudit.blocks.planning import plan_claims
    from medaudit.exceptions import MedauditError
    from medaudit.io.claimsfile import read_claims_source
    from medaudit.io.specfile import validate_model

    if thresholds not in ("source", "local"):
        raise MedauditError(f"thresholds must be 'source' (the source's τ, fixed) or 'local' (chosen "
                            f"again on the local data); got {thresholds!r}.")
    if prevalence is not None and not (isinstance(prevalence, (int, float)) and 0 < prevalence < 1):
        raise MedauditError(f"prevalence must lie strictly between 0 and 1; got {prevalence!r}.")
    doc, source_file = read_claims_source(source)
    loc = load_local(local, spec=spec, **options)
    site = site_cohort(loc, cohort)
    sub = loc.scores[loc.scores["cohort"] == site].drop_duplicates("image_id")
    n_pos, n_neg = int((sub["label"] == 1).sum()), int((sub["label"] == 0).sum())
    local_pi = n_pos / max(n_pos + n_neg, 1)
    groups = {str(g) for g in sub.get("negative_group", pd.Series(dtype=object)).dropna() if str(g)}
    present = present_models(loc.scores, site)
    restated: dict[str, tuple[Any, str]] = {}
    for c in doc["claims"]:
        restated[c["id"]] = restate(c, cohort=site, present=present,
                                    primary_prompt=loc.primary_prompt, negative_groups=groups,
                                    n_pos=n_pos, n_neg=n_neg, prevalence=prevalence,
                                    thresholds=thresholds, local_scale=loc.spec.score_scale,
                                    source_scale=(doc.get("source") or {}).get("score_scale"))
    declared = [d for d, _ in restated.values() if not isinstance(d, str)]
    raw = {**loc.raw, "claims": {"declared": declared, "generate": ["none"]}}
    where = str(loc.spec_path) if loc.spec_path is not None else "the local data options"
    s = validate_model(raw, AuditSpec, source=where, what="audit spec")
    if declared:
        outcome = run_audit(s, loc.base, table=loc.table)
        matrix, local_prov, run_spec = outcome.claims, outcome.provenance, outcome.spec
        results = outcome.results
    else:  # nothing to judge here (every claim has its reason): no local run
        matrix, results, run_spec = pd.DataFrame(), {}, loc.spec
        local_prov = {"inputs": loc.inputs, "seed": s.seed, "n_resamples": s.n_resamples,
                      "confidence_level": s.confidence_level, "versions": versions(),
                      "spec": s.model_dump(mode="json", exclude={"execution"})}
    at_e = matrix[matrix["change"] == "at E"] if len(matrix) else matrix
    by_id = {r["claim_id"]: r for r in at_e.to_dict("records")}
    # design and B of each claim's own cell live in the block table (the matrix omits them)
    block = results.get("claims")
    cells = block.tables.get("claims") if block is not None else None
    design = {} if cells is None or cells.empty else {
        r["claim_id"]: (r.get("design"), r.get("n_resamples"))
        for r in cells[cells["change"] == "at E"].to_dict("records")}
    plans = {}
    if len(at_e):
        plan = plan_claims(at_e.reset_index(drop=True), results, run_spec.study(),
                           power=power, confidence_level=run_spec.confidence_level)
        plans = {r["claim_id"]: r for r in plan.to_dict("records")}
    rows = []
    for c in doc["claims"]:
        d, origin = restated[c["id"]]
        e = c["E"]
        row = source_row(c, site=site, origin=origin, family=FAMILY,
                         confidence_level=run_spec.confidence_level, seed=run_spec.seed,
                         changes=_changes(e.get("cohort"), site, c, d, local_pi, origin))
        if isinstance(d, str):
            row.update(verdict="not assessable here", reason=d, local_n_pos=n_pos,
                       local_n_neg=n_neg, local_prevalence=local_pi)
            rows.append(row)
            continue
        r = by_id[c["id"]]
        verdict = str(r["verdict"])
        reason = str(r.get("qualification") or "")
        if verdict in _UNJUDGED:
            verdict = "not assessable here"
        pi = d.get("prevalence") if _pi_dependent(d) else None
        row.update(local_estimate=r["estimate"], local_ci_low=r["ci_low"], local_ci_high=r["ci_high"],
                   verdict=verdict, reason=reason, local_n_pos=r.get("n_pos"),
                   local_n_neg=r.get("n_neg"), local_prevalence=local_pi if pi is None else pi,
                   design=design.get(c["id"], (None, None))[0],
                   n_resamples=design.get(c["id"], (None, None))[1],
                   criterion=r.get("criterion") or e["criterion"])
        if isinstance(r.get("other_criterion"), str) and r["other_criterion"]:
            # an operating point's second constraint, beside the one that decides the verdict
            row.update({k: r.get(k) for k in ("other_criterion", "other_estimate", "other_ci_low",
                                              "other_ci_high")})
            if _rate_of(r["other_criterion"]) == _rate_of(e["criterion"]) != _rate_of(
                    r.get("criterion")):
                # the site's verdict is decided by the other constraint than the source's:
                # the row keeps the source's (its level and source numbers are that
                # constraint's) with the local numbers of the same one, and the deciding
                # constraint beside it, said in the reason
                row.update(criterion=e["criterion"], local_estimate=r["other_estimate"],
                           local_ci_low=r["other_ci_low"], local_ci_high=r["other_ci_high"],
                           other_criterion=r["criterion"], other_estimate=r["estimate"],
                           other_ci_low=r["ci_low"], other_ci_high=r["ci_high"])
                # a claim that holds holds by both constraints: none decides it alone
                how = "holds here too:" if verdict == "holds" else "decided here by"
                decided = (f"{how} {r['criterion']} ≥ {_num(r.get('claim_value')):g}: "
                           f"{_num(r['estimate']):.3f} [{_num(r['ci_low']):.3f}, "
                           f"{_num(r['ci_high']):.3f}]")
                row["reason"] = "; ".join(x for x in (decided, reason) if x)
        if not math.isnan(_num(r.get("threshold"))):
            row["threshold"] = float(r["threshold"])
        p = plans.get(c["id"])
        if verdict == "unresolved" and p is not None:
            add_p, add_n = _num(p.get("additional_pos")), _num(p.get("additional_neg"))
            npos, nneg = _num(p.get("n_pos")), _num(p.get("n_neg"))
            row.update(resolves_to=p.get("resolves_to"), additional_pos=add_p, additional_neg=add_n,
                       resolve_n_pos=npos + add_p, resolve_n_neg=nneg + add_n,
                       exact_additional=_num(p.get("exact_additional")),
                       plan_rule=p.get("rule") if p.get("status") == "unresolved" else
                       f"{p.get('status')}: {p.get('note')}")
        rows.append(row)
    table = pd.DataFrame(rows, columns=list(PORT_COLUMNS))
    from medaudit import __version__

    provenance = {
        "source": source_provenance(doc, source_file),
        "local": {**{k: local_prov.get(k) for k in ("inputs", "seed", "n_resamples",
                                                     "confidence_level", "ci_method", "designs",
                                                     "versions")},
                  "spec": local_prov.get("spec"), "cohort": site, "n_pos": n_pos,
                  "n_neg": n_neg, "prevalence": local_pi},
        "port": {"medaudit": __version__, "cohort": site, "prevalence": prevalence,
                 "thresholds": thresholds, "power": power,
                 "rule": "each source claim re-stated as a declared claim at the site (claims "
                         "block: own paired bootstrap, the site's design, the run's B and seed)"},
    }
    inputs = spec_inputs(run_spec, loc.base, loc.spec_path)
    inputs["source"] = [source_file.parent if source_file.name == "results.json" else source_file]
    return PortResult(claims=table, source=doc, provenance=provenance,
                      local_matrix=matrix.reset_index(drop=True), _inputs=inputs)


class _CallableModule(types.ModuleType):
    """``medaudit.port`` is both this module and the function :func:`port`."""

    def __call__(self, source, local=None, /, **kwargs):
        return port(source, local, **kwargs)


sys.modules[__name__].__class__ = _CallableModule
