"""Robustness and sensitivity analyses of the agreement estimators (paper 002, M2.12).

Each analysis changes one element of the primary design -- the data (uncertain-label
mapping, one study per patient, a left-out finding, a study subsample), the split (whole
studies in the shot), an estimator setting (the HD-Cal penalty) or the interface (binary
verdicts) -- and refits the fixed policies on the changed design (selection and the GLMM
are not rerun: the paper's checks compare fixed policies).  A :class:`Variant` names what
was changed (``analysis``, ``parameter``, ``changed`` in words); :func:`variants` builds
them from the evaluable judgment table and :func:`run_variants` runs the design on each.
The agreement block turns the results into its ``robustness`` tables.

The analyses (keys of :data:`ANALYSES`):

``uncertain_labels``
    The judgment table under each uncertain-label policy (exclude / negative / positive).
``one_study_per_patient``
    At the institutions with repeated patients (paper: MIMIC), one study per patient
    under each rule of ``dedup_rules`` (``first``: the earliest by ``order_by``, else the
    smallest study id; ``random``: a random one, seed ``seed``), plus the size-matched
    control: as many studies as the deduplicated table keeps, drawn at random with the
    repeats retained (``control_draws`` draws, seeds ``seed + draw``).
``leave_one_finding_out``
    Every finding dropped in turn, at every institution.
``subsample``
    ``fraction`` (paper: 75 %) of the studies of every institution, drawn at random,
    ``subsample_draws`` times (seeds ``seed + draw``).
``study_disjoint``
    Shots of whole studies and a test set without them
    (:func:`medaudit.agreement.design.fold_rows` with ``split="study"``).
``hdcal_penalty_oracle``
    HD-Cal refitted at every C of ``penalty_grid`` (paper: five values over four orders of
    magnitude); the block adds the oracle that takes, per setting, the C with the lowest
    test mean.
``binary_matched``
    The matched set of fixed policies (``matched_estimators``) rescored on the
    ``matched_protocol`` verdicts (paper: binary).

[AMBIG] choices, each documented where it is made: the study order of ``first`` (the
judgment table has no study date; name a column with ``order_by``), the repeat count of
the 75 % subsample (the paper gives none; five, as its size-matched control), and the
subsample drawn per institution.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import pandas as pd
from pydantic import Field, field_validator, model_validator

from medaudit._validation import RNGLike, as_generator
from medaudit.agreement._base import ESTIMATORS, estimator_label
from medaudit.exceptions import SchemaError
from medaudit.io.limits import Seed
from medaudit.io.specfile import Strict as _Strict

__all__ = ["ANALYSES", "DEDUP_RULES", "MATCHED_SET", "RobustnessConfig", "Variant", "variants",
           "run_variants", "repeated_patient_institutions", "one_study_per_patient",
           "size_matched_studies", "subsample_studies", "leave_finding_out", "judgment_data"]

ANALYSES = ("uncertain_labels", "one_study_per_patient", "leave_one_finding_out", "subsample",
            "study_disjoint", "hdcal_penalty_oracle", "binary_matched")
DEDUP_RULES = ("first", "random")
#: the fixed policies scorable on binary verdicts (M2.12: the GLMM and the HAS variants are
#: not), with the constant as the reference
MATCHED_SET = ("naive", "additive", "hdcal", "hdcal_weighted", "target_only", "beta_binomial")
Estimator = Literal[ESTIMATORS]  # type: ignore[valid-type]
Analysis = Literal[ANALYSES]  # type: ignore[valid-type]


class RobustnessConfig(_Strict):
    """``agreement.robustness``: the M2.12 analyses to run and their settings.

    The spec may give the list of analyses alone (``robustness: [subsample,
    study_disjoint]``); every setting then takes its default.
    """

    #: the analyses to run (none by default), in this order in the output
    analyses: list[Analysis] = Field(default_factory=list)
    #: the fixed policies refitted (the GLMM only when ``agreement.glmm`` is true)
    estimators: list[Estimator] = Field(default_factory=lambda: list(MATCHED_SET), min_length=1)
    #: institutions deduplicated to one study per patient (None: every one with a patient
    #: holding several studies -- MIMIC in the paper)
    institutions: list[str] | None = None
    dedup_rules: list[Literal[DEDUP_RULES]] = Field(  # type: ignore[valid-type]
        default_factory=lambda: list(DEDUP_RULES), min_length=1)
    #: column giving the study order for rule ``first`` (e.g. a study date); None: study id
    order_by: str | None = None
    #: random draws of the size-matched control (repeats retained) and of the subsample
    control_draws: int = Field(5, ge=0, le=1000)
    subsample_draws: int = Field(5, ge=1, le=1000)
    #: fraction of every institution's studies kept by ``subsample``
    fraction: float = Field(0.75, gt=0.0, lt=1.0)
    #: seed of the random rule (paper: 42); draw d of a control or subsample uses seed + d
    seed: Seed = 42
    #: HD-Cal penalties (inverse L2 strength C) of the oracle (paper: five over 4 decades)
    penalty_grid: list[float] = Field(default_factory=lambda: [0.01, 0.1, 1.0, 10.0, 100.0],
                                      min_length=2)
    #: the interface of the matched-set comparison and its fixed policies
    matched_protocol: str = "binary"
    matched_estimators: list[Estimator] = Field(default_factory=lambda: list(MATCHED_SET),
                                                min_length=2)

    @field_validator("penalty_grid")
    @classmethod
    def _grid(cls, v: list[float]) -> list[float]:
        if any(not (math.isfinite(c) and c > 0) for c in v) or len(set(v)) != len(v):
            raise ValueError(f"penalty_grid must hold distinct positive numbers; got {v}")
        return v

    @model_validator(mode="after")
    def _distinct(self) -> RobustnessConfig:
        for name in ("analyses", "estimators", "dedup_rules", "matched_estimators"):
            vals = getattr(self, name)
            if len(set(vals)) != len(vals):
                raise ValueError(f"agreement.robustness.{name} repeat a name: {vals}")
        if "naive" not in self.matched_estimators:
            raise ValueError("agreement.robustness.matched_estimators must include 'naive' (the "
                             "reference constant of the matched-set comparison)")
        return self


@dataclass(frozen=True, slots=True, kw_only=True)
class Variant:
    """One changed design: what changed, the judgments it runs on and how it is fitted."""

    analysis: str
    #: the changed element's setting, ``name=value`` pairs joined by commas
    parameter: str
    #: the change in words (for the report and the portability matrix)
    changed: str
    #: evaluable judgments of one protocol (the selected models)
    table: pd.DataFrame
    protocol: str
    estimators: tuple[str, ...]
    split: str = "row"
    #: seed of the random change (None when the change is not random)
    seed: int | None = None


# ----------------------------------------------------------------------------- data changes
def _studies(table: pd.DataFrame) -> pd.DataFrame:
    """One row per (institution, study) with its patient, sorted (institution, study)."""
    return (table[["institution", "study_id", "patient_id"]].drop_duplicates(["institution", "study_id"])
            .sort_values(["institution", "study_id"], kind="stable").reset_index(drop=True))


def _keep(table: pd.DataFrame, studies: pd.DataFrame) -> pd.DataFrame:
    key = pd.MultiIndex.from_frame(table[["institution", "study_id"]])
    keep = pd.MultiIndex.from_frame(studies[["institution", "study_id"]])
    return table[key.isin(keep)].reset_index(drop=True)


def repeated_patient_institutions(table: pd.DataFrame) -> list[str]:
    """Institutions (sorted) where some patient has more than one study.

    Examples
    --------
    >>> t = pd.DataFrame({"institution": ["A", "A", "B"], "study_id": ["s1", "s2", "s3"],
    ...                   "patient_id": ["p1", "p1", "p2"]})
    >>> repeated_patient_institutions(t)
    ['A']
    """
    s = _studies(table)
    n = s.groupby(["institution", "patient_id"], sort=True).size()
    return sorted({inst for (inst, _), k in n.items() if k > 1})


def one_study_per_patient(table: pd.DataFrame, *, institutions: Sequence[str], rule: str,
                          rng: RNGLike = 42, order_by: str | None = None) -> pd.DataFrame:
    """Keep one study per patient at ``institutions`` (all rows of the kept studies).

    Parameters
    ----------
    table : DataFrame
        Judgments with ``institution, study_id, patient_id`` (several models and findings
        per study; a study is kept or dropped whole, for every model).
    institutions : sequence of str
        Where to deduplicate; the other institutions are untouched.
    rule : {"first", "random"}
        ``first``: the study with the smallest ``order_by`` value (ties and the default:
        the smallest study id as text).  ``random``: one study per patient uniformly at
        random: the studies of each institution, sorted by id, are ranked by one
        permutation drawn from ``rng`` (institutions in sorted order) and each patient
        keeps its best-ranked study.
    rng : int or Generator, default=42
        The paper's random rule uses seed 42.
    order_by : str, optional
        A column with one value per study giving the study order (e.g. a study date).

    Returns
    -------
    DataFrame
        The rows of the kept studies, in input order, index reset.

    Examples
    --------
    >>> t = pd.DataFrame({"institution": "A", "study_id": ["s2", "s1", "s3"],
    ...                   "patient_id": ["p1", "p1", "p2"], "finding": "f"})
    >>> one_study_per_patient(t, institutions=["A"], rule="first")["study_id"].tolist()
    ['s1', 's3']
    """
    from medaudit._validation import check_option

    check_option(rule, DEDUP_RULES, name="rule")
    s = _studies(table)
    unknown = sorted(set(institutions) - set(s["institution"]))
    if unknown:
        raise SchemaError(f"one study per patient: institution(s) {unknown} are not in the judgment "
                          f"table; it has {sorted(set(s['institution']))}.")
    if order_by is not None:
        if order_by not in table.columns:
            raise SchemaError(f"one study per patient: order_by column {order_by!r} is not in the "
                              f"judgment table; its columns are {list(table.columns)}.")
        per = table.groupby(["institution", "study_id"], sort=True)[order_by].nunique(dropna=False)
        if (per > 1).any():
            inst, sid = per[per > 1].index[0]
            raise SchemaError(f"one study per patient: column {order_by!r} has several values for "
                              f"study {sid!r} at {inst!r}; it must hold one value per study.")
        first = table.drop_duplicates(["institution", "study_id"]).set_index(
            ["institution", "study_id"])[order_by]
        s["_order"] = first.loc[pd.MultiIndex.from_frame(s[["institution", "study_id"]])].to_numpy()
    gen, _ = as_generator(rng)
    keep = [s[~s["institution"].isin(institutions)]]
    for inst in sorted(set(institutions)):
        g = s[s["institution"] == inst].copy()
        if rule == "random":
            g["_rank"] = gen.permutation(len(g))
            by = ["patient_id", "_rank"]
        else:
            by = ["patient_id", "_order", "study_id"] if order_by is not None else \
                ["patient_id", "study_id"]
        keep.append(g.sort_values(by, kind="stable").drop_duplicates("patient_id"))
    return _keep(table, pd.concat(keep, ignore_index=True))


def size_matched_studies(table: pd.DataFrame, *, n_studies: Mapping[str, int], rng: RNGLike
                         ) -> pd.DataFrame:
    """``n_studies[inst]`` studies of each named institution drawn at random (repeats retained).

    The control of the one-study-per-patient analysis: the same number of studies as the
    deduplicated table, chosen without regard to the patient (institutions in sorted
    order, each one ``choice`` without replacement over its studies sorted by id).
    """
    s = _studies(table)
    gen, _ = as_generator(rng)
    keep = [s[~s["institution"].isin(list(n_studies))]]
    for inst in sorted(n_studies):
        g = s[s["institution"] == inst]
        k = int(n_studies[inst])
        if not 0 < k <= len(g):
            raise SchemaError(f"size-matched control: {k} studies asked at {inst!r}, which has "
                              f"{len(g)}.")
        keep.append(g.iloc[np.sort(gen.choice(len(g), size=k, replace=False))])
    return _keep(table, pd.concat(keep, ignore_index=True))


def subsample_studies(table: pd.DataFrame, *, fraction: float, rng: RNGLike) -> pd.DataFrame:
    """``fraction`` of the studies of every institution, drawn at random (whole studies).

    Each institution keeps ``floor(fraction * n + 1/2)`` (at least one) of its ``n``
    studies; institutions are drawn in sorted order from one generator.  [AMBIG] The paper
    says "75 % study subsampling"; per institution keeps every institution's share.

    Examples
    --------
    >>> t = pd.DataFrame({"institution": ["A"] * 4 + ["B"] * 2,
    ...                   "study_id": ["a1", "a2", "a3", "a4", "b1", "b2"], "patient_id": "p"})
    >>> sub = subsample_studies(t, fraction=0.75, rng=0)
    >>> sub.groupby("institution").size().tolist()
    [3, 2]
    """
    if not 0.0 < float(fraction) < 1.0:
        raise SchemaError(f"subsample fraction must lie in (0, 1); got {fraction!r}.")
    s = _studies(table)
    gen, _ = as_generator(rng)
    keep = []
    for inst in sorted(set(s["institution"])):
        g = s[s["institution"] == inst]
        k = max(1, int(math.floor(fraction * len(g) + 0.5)))
        keep.append(g.iloc[np.sort(gen.choice(len(g), size=k, replace=False))])
    return _keep(table, pd.concat(keep, ignore_index=True))


def leave_finding_out(table: pd.DataFrame, finding: str) -> pd.DataFrame:
    """Every row but those of ``finding`` (at every institution, for every model)."""
    if finding not in set(table["finding"]):
        raise SchemaError(f"leave-one-finding-out: finding {finding!r} is not in the judgment "
                          f"table; it has {sorted(set(table['finding']))}.")
    return table[table["finding"] != finding].reset_index(drop=True)


# ----------------------------------------------------------------------------- variants
def _select(table: pd.DataFrame, protocol: str, models: Sequence[str] | None, what: str
            ) -> pd.DataFrame:
    t = table[table["protocol"] == protocol]
    if models is not None:
        t = t[t["model"].isin(models)]
    if t.empty:
        raise SchemaError(f"robustness ({what}): the judgment table has no {protocol!r} verdicts "
                          f"of the selected models; protocols present: "
                          f"{sorted(table['protocol'].unique())}.")
    return t.reset_index(drop=True)


def _active(names: Sequence[str], glmm: bool) -> tuple[str, ...]:
    return tuple(e for e in names if glmm or e != "glmm")


def variants(judgments: pd.DataFrame, *, protocol: str, config: RobustnessConfig,
             models: Sequence[str] | None = None, glmm: bool = False,
             uncertain_tables: Mapping[str, pd.DataFrame] | None = None) -> list[Variant]:
    """The changed designs of ``config.analyses``, in that order.

    Parameters
    ----------
    judgments : DataFrame
        The evaluable judgment table (every protocol).
    protocol : str
        The primary protocol (``agreement.protocol``).
    config : RobustnessConfig
    models : sequence of str, optional
        The models of the design (``agreement.models``; None: every model).
    glmm : bool, default=False
        Whether the GLMM may be refitted (``agreement.glmm``).
    uncertain_tables : dict policy -> DataFrame, optional
        The evaluable table under each uncertain policy (``uncertain_labels`` needs it).
    """
    t = _select(judgments, protocol, models, "primary protocol")
    ests = _active(config.estimators, glmm)
    out: list[Variant] = []
    for analysis in config.analyses:
        out += _BUILDERS[analysis](t, judgments, protocol, config, models, ests, uncertain_tables)
    return out


def _uncertain(t, judgments, protocol, config, models, ests, uncertain_tables) -> list[Variant]:
    if not uncertain_tables:
        raise SchemaError("robustness analysis 'uncertain_labels' needs the judgment table under "
                          "every uncertain policy (AuditContext.judgment_variants, built by "
                          "medaudit.agreement.judgments.judgment_variants); this context has none.")
    words = {"exclude": "uncertain references excluded",
             "negative": "uncertain references mapped to negative (0)",
             "positive": "uncertain references mapped to positive (1)"}
    return [Variant(analysis="uncertain_labels", parameter=f"uncertain={policy}",
                    changed=words.get(policy, f"uncertain policy {policy}"),
                    table=_select(uncertain_tables[policy], protocol, models, "uncertain labels"),
                    protocol=protocol, estimators=ests)
            for policy in sorted(uncertain_tables)]


def _dedup(t, judgments, protocol, config, models, ests, uncertain_tables) -> list[Variant]:
    insts = config.institutions if config.institutions is not None else \
        repeated_patient_institutions(t)
    unknown = sorted(set(insts) - set(t["institution"]))
    if unknown:
        raise SchemaError(f"agreement.robustness.institutions names {unknown}, which the judgment "
                          f"table lacks; it has {sorted(set(t['institution']))}.")
    if not insts:
        raise SchemaError("robustness analysis 'one_study_per_patient': no institution has a "
                          "patient with several studies (patient_id), so there is nothing to "
                          "deduplicate; name institutions with agreement.robustness.institutions "
                          "or drop the analysis.")
    where = ",".join(sorted(insts))
    out, kept = [], {}
    for rule in config.dedup_rules:
        d = one_study_per_patient(t, institutions=insts, rule=rule, rng=config.seed,
                                  order_by=config.order_by)
        n = _studies(d).groupby("institution").size()
        kept = {i: int(n[i]) for i in insts}
        how = ("the first study" + (f" by {config.order_by}" if config.order_by else " by study id")
               if rule == "first" else f"a random study (seed {config.seed})")
        out.append(Variant(analysis="one_study_per_patient",
                           parameter=f"institution={where},rule={rule}",
                           changed=f"one study per patient at {where}: {how}", table=d,
                           protocol=protocol, estimators=ests,
                           seed=config.seed if rule == "random" else None))
    for draw in range(config.control_draws):
        seed = config.seed + draw
        d = size_matched_studies(t, n_studies=kept, rng=seed)
        sizes = ", ".join(f"{i}: {k}" for i, k in sorted(kept.items()))
        out.append(Variant(analysis="one_study_per_patient",
                           parameter=f"institution={where},rule=size_matched_control,draw={draw}",
                           changed=f"size-matched control at {where}: as many studies as one "
                                   f"per patient ({sizes}), drawn at random with repeats "
                                   f"retained (seed {seed})",
                           table=d, protocol=protocol, estimators=ests, seed=seed))
    return out


def _lofo(t, judgments, protocol, config, models, ests, uncertain_tables) -> list[Variant]:
    return [Variant(analysis="leave_one_finding_out", parameter=f"finding={f}",
                    changed=f"finding {f!r} left out at every institution",
                    table=leave_finding_out(t, f), protocol=protocol, estimators=ests)
            for f in sorted(set(t["finding"]))]


def _subsample(t, judgments, protocol, config, models, ests, uncertain_tables) -> list[Variant]:
    out = []
    for draw in range(config.subsample_draws):
        seed = config.seed + draw
        out.append(Variant(analysis="subsample", parameter=f"fraction={config.fraction:g},draw={draw}",
                           changed=f"{config.fraction:.0%} of the studies of every institution, "
                                   f"drawn at random (seed {seed})",
                           table=subsample_studies(t, fraction=config.fraction, rng=seed),
                           protocol=protocol, estimators=ests, seed=seed))
    return out


def _disjoint(t, judgments, protocol, config, models, ests, uncertain_tables) -> list[Variant]:
    return [Variant(analysis="study_disjoint", parameter="split=study",
                    changed="shots of whole studies; the test set excludes the shot's studies",
                    table=t, protocol=protocol, estimators=ests, split="study")]


def _penalty(t, judgments, protocol, config, models, ests, uncertain_tables) -> list[Variant]:
    grid = [estimator_label("hdcal", C=c) for c in config.penalty_grid]
    rest = tuple(e for e in ests if e != "hdcal")
    return [Variant(analysis="hdcal_penalty_oracle",
                    parameter="C=" + "|".join(f"{c:g}" for c in config.penalty_grid),
                    changed="HD-Cal refitted at every penalty of the grid", table=t,
                    protocol=protocol, estimators=(*rest, *grid))]


def _binary(t, judgments, protocol, config, models, ests, uncertain_tables) -> list[Variant]:
    if config.matched_protocol == protocol:
        raise SchemaError(f"robustness analysis 'binary_matched' compares interfaces, but "
                          f"agreement.robustness.matched_protocol is the primary protocol "
                          f"{protocol!r}; name another protocol.")
    b = _select(judgments, config.matched_protocol, models, "binary_matched")
    return [Variant(analysis="binary_matched", parameter=f"protocol={config.matched_protocol}",
                    changed=f"verdicts of the {config.matched_protocol!r} protocol, matched set "
                            f"of fixed policies",
                    table=b, protocol=config.matched_protocol,
                    estimators=tuple(config.matched_estimators))]


_BUILDERS: dict[str, Callable[..., list[Variant]]] = {
    "uncertain_labels": _uncertain, "one_study_per_patient": _dedup,
    "leave_one_finding_out": _lofo, "subsample": _subsample, "study_disjoint": _disjoint,
    "hdcal_penalty_oracle": _penalty, "binary_matched": _binary}


# ----------------------------------------------------------------------------- running
def judgment_data(table: pd.DataFrame) -> Any:
    """The :class:`~medaudit.agreement.design.JudgmentData` of an evaluable table (one protocol)."""
    from medaudit.agreement.design import JudgmentData

    return JudgmentData.from_columns(
        model=table["model"].to_numpy(), institution=table["institution"].to_numpy(),
        finding=table["finding"].to_numpy(), direction=table["direction"].to_numpy(),
        correct=table["correct"].to_numpy(), study_id=table["study_id"].to_numpy())


def run_variants(items: Sequence[Variant], *, budgets: Sequence[int], repeats: int, first_seed: int,
                 n_bins: int, options: Mapping[str, Mapping[str, float]] | None = None,
                 progress: Callable[[str], None] | None = None,
                 map: Callable[[Callable[[Any], Any], Sequence[Any]], Sequence[Any]] | None = None
                 ) -> list[tuple[Variant, Any]]:
    """Fit the fixed policies of every variant (no selection; shots as in the primary design).

    Returns ``(variant, DesignResult)`` pairs in the order of ``items``; a variant whose
    design cannot run (a model left without judgments at an institution, a budget above an
    institution's judgments) is an error naming the variant.
    """
    from medaudit.agreement.design import run_design
    from medaudit.exceptions import MedauditError

    say = progress or (lambda msg: None)
    out = []
    for i, v in enumerate(items):
        say(f"agreement robustness {i + 1}/{len(items)}: {v.analysis} [{v.parameter}]")
        try:
            res = run_design(judgment_data(v.table), estimators=v.estimators, budgets=budgets,
                             repeats=repeats, first_seed=first_seed, selection=False,
                             n_bins=n_bins, split=v.split, options=options, map=map)
        except MedauditError as e:
            raise SchemaError(f"robustness analysis {v.analysis!r} [{v.parameter}]: {e}") from None
        out.append((v, res))
    return out
