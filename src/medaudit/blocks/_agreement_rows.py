"""Row builders of the agreement block: fixed policies, summaries, comparisons, robustness.

Kept apart from :mod:`medaudit.blocks.agreement` (the block, its config and claims) so
that each stays one concept of readable size.  Every row is built with
:func:`~medaudit.blocks.rows.spec_row`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from medaudit.agreement._base import family_of, parse_estimator
from medaudit.agreement.design import DesignResult
from medaudit.blocks.rows import E_COLUMNS, PROVENANCE_COLUMNS, spec_row

__all__ = ["COMPARISONS", "software", "fixed_rows", "summary_rows", "comparisons", "gap_points",
           "robustness_tables"]


def software(info: dict[str, Any]) -> str:
    """The library, solver and settings that fitted an estimator, in words."""
    if "sklearn" in info:
        return (f"sklearn {info['sklearn']} LogisticRegression(lbfgs, l2, C={info['C']:g}, "
                f"max_iter={info['max_iter']})" + (" -> naive fallback" if info["fallback"] else ""))
    if "numpyro" in info:
        return (f"numpyro {info['numpyro']} / jax {info['jax']} SVI AutoNormal "
                f"Adam({info['step_size']:g}) {info['n_steps']} steps, seed {info['seed']}")
    if "solver" in info:
        import scipy

        return f"scipy {scipy.__version__} {info['solver']}"
    return f"numpy {np.__version__} (closed form)"


def fixed_rows(res: DesignResult, protocol: str, ece_id: str) -> list[dict]:
    """One row per LOIO fold x estimator x criterion (the ``fixed_policy`` table)."""
    d = res.data
    rows = []
    for f in res.loio:
        k = f.key
        for est in res.settings["estimators"]:
            info = f.info[est]
            for crit, val in (("brier_score", f.brier[est]), (ece_id, f.ece[est])):
                rows.append(spec_row(
                    model=d.models[k.model], prompt=protocol, cohort=d.institutions[k.target],
                    criterion=crit, design=f"loio[budget={k.budget},repeat={k.rep}]",
                    seed=res.settings["first_seed"] + k.rep, estimator=est,
                    estimator_family=family_of(est), budget=k.budget, repeat=k.rep, estimate=val,
                    n=f.n_test, n_shot=f.n_shot, fallback=bool(info.get("fallback", False)),
                    converged=info.get("converged"), software=software(info),
                    qualification=""))
    return rows


def summary_rows(fixed: pd.DataFrame, first_seed: int) -> pd.DataFrame:
    """Set A per setting: the mean over repeats, its std and ``worse_than_naive``."""
    keys = ["model", "prompt", "cohort", "criterion", "budget", "estimator"]
    agg = fixed.groupby(keys, sort=False)["estimate"].agg(["mean", "std", "size"])
    naive = {k[:-1]: v for k, v in agg["mean"].items() if k[-1] == "naive"}
    rows = []
    for (m, p, c, crit, b, est), r in agg.iterrows():
        ref = naive.get((m, p, c, crit, b))
        rows.append(spec_row(model=m, prompt=p, cohort=c, criterion=crit,
                             design=f"loio[budget={b}]", seed=first_seed, estimator=est,
                             estimator_family=family_of(est), budget=b, estimate=float(r["mean"]),
                             std=float(r["std"]), n_repeats=int(r["size"]),
                             worse_than_naive=None if ref is None else bool(r["mean"] > ref),
                             qualification=""))
    return pd.DataFrame(rows)


#: within-family comparisons counted over the settings (model x target x budget > 0), M2.12-M2.13:
#: HD-Cal vs additive (22/24 on ECE and Brier), Beta-Binomial vs HD-Cal (ECE lower in 23/24)
COMPARISONS = (("hdcal", "additive"), ("beta_binomial", "hdcal"))


def comparisons(summary: pd.DataFrame, *, pairs: tuple[tuple[str, str], ...] = COMPARISONS,
                versus_naive: bool = True) -> pd.DataFrame:
    """Count the settings where estimator ``a`` has a strictly lower mean than ``b``.

    A setting is (model, target, non-zero budget) of ``fixed_policy_summary``; per
    criterion, ``estimate`` = ``n_lower`` / ``n_settings``.  With ``versus_naive``, every
    estimator is also counted against the constant (``n_lower`` = settings where it is
    *worse*, criterion-wise, as the paper counts "worse than the constant in 9/24").
    Pairs whose estimators were not run are skipped.
    """
    s = summary[summary["budget"] > 0]
    rows = []
    ests = set(s["estimator"])
    todo = [(a, b, "lower") for a, b in pairs if a in ests and b in ests]
    if versus_naive and "naive" in ests:
        todo += [(e, "naive", "higher") for e in sorted(ests - {"naive"})]
    for crit, g in s.groupby("criterion", sort=True):
        w = g.pivot_table(index=["model", "prompt", "cohort", "budget"], columns="estimator",
                          values="estimate")
        for a, b, how in todo:
            diff = (w[a] - w[b]).dropna()
            hit = int((diff < 0).sum() if how == "lower" else (diff > 0).sum())
            p = sorted(set(g["prompt"]))
            rows.append(spec_row(model="all", prompt=", ".join(p), cohort="all", criterion=crit,
                                 design="loio[budget>0]", estimator=a, versus=b,
                                 comparison=f"{a} {'<' if how == 'lower' else '>'} {b}",
                                 estimate=hit / len(diff) if len(diff) else np.nan,
                                 n_holds=hit, n_settings=int(len(diff))))
    return pd.DataFrame(rows)


def gap_points(summary: pd.DataFrame, hi: str, lo: str, criterion: str = "brier_score"
               ) -> tuple[pd.Series, pd.Series]:
    """Per institution the mean of ``hi - lo`` over its settings (models x non-zero budgets).

    Returns the gaps and the number of settings behind each, indexed by institution
    (sorted); both empty when either estimator or the criterion is missing.
    """
    s = summary[(summary["criterion"] == criterion) & (summary["budget"] > 0)]
    if s.empty or not {hi, lo} <= set(s["estimator"]):
        return pd.Series(dtype=float), pd.Series(dtype=np.int64)
    w = s.pivot_table(index=["model", "cohort", "budget"], columns="estimator", values="estimate")
    diff = (w[hi] - w[lo]).dropna().groupby(level="cohort", sort=True)
    return diff.mean(), diff.size()


# ----------------------------------------------------------------------------- robustness
_LEAD = ("analysis", "parameter", "changed")


def _lead(df: pd.DataFrame, v: Any) -> pd.DataFrame:
    """``df`` with the robustness columns after E and provenance, and the design's counts."""
    if df.empty:
        return df
    df = df.copy()
    if v.split != "row":  # the design column names the changed split
        df["design"] = df["design"].str.replace("]", f",split={v.split}]", regex=False)
    for k in _LEAD:
        df[k] = getattr(v, k)
    df["change_seed"] = v.seed
    df["n_judgments"] = len(v.table)
    df["n_studies"] = int(v.table[["institution", "study_id"]].drop_duplicates().shape[0])
    first = [c for c in (*E_COLUMNS, *PROVENANCE_COLUMNS, *_LEAD) if c in df.columns]
    return df[first + [c for c in df.columns if c not in first]]


def _gap_rows(summary: pd.DataFrame, gap: tuple[str, str], ece_id: str, protocol: str,
              first_seed: int) -> pd.DataFrame:
    hi, lo = gap
    rows = []
    for crit in ("brier_score", ece_id):
        g, n = gap_points(summary, hi, lo, crit)
        if g.empty:
            continue
        common = dict(model="all", prompt=protocol, criterion=f"{crit}_difference",
                      design="loio[budget>0]", seed=first_seed, estimator=f"{hi} - {lo}",
                      comparison=f"{hi} - {lo}")
        rows += [spec_row(cohort=c, **common, estimate=float(x), n_settings=int(n[c]))
                 for c, x in g.items()]
        rows.append(spec_row(cohort="all", **common, estimate=float(g.mean()),
                             n_settings=int(n.sum()), n_institutions=int(g.size)))
    return pd.DataFrame(rows)


def _oracle(summary: pd.DataFrame, labels: Sequence[str]) -> pd.DataFrame:
    """Per setting and criterion the HD-Cal label with the lowest mean (first in grid order on ties)."""
    rank = {x: i for i, x in enumerate(labels)}
    s = summary[summary["estimator"].isin(labels)].copy()
    s["_rank"] = s["estimator"].map(rank)
    keys = ["model", "prompt", "cohort", "criterion", "budget"]
    best = (s.sort_values([*keys, "estimate", "_rank"], kind="stable")
            .drop_duplicates(keys).drop(columns="_rank"))
    best["chosen"] = best["estimator"]
    best["chosen_C"] = [parse_estimator(x)[1]["C"] for x in best["estimator"]]
    best["estimator"] = "hdcal[C=oracle]"
    best["estimator_family"] = family_of("hdcal")
    best["worse_than_naive"] = None
    return best.reset_index(drop=True)


def _as_hdcal(summary: pd.DataFrame, label: str, labels: Sequence[str]) -> pd.DataFrame:
    """The summary with ``label`` read as HD-Cal (the other grid labels dropped)."""
    s = summary[~summary["estimator"].isin([x for x in labels if x != label])].copy()
    s.loc[s["estimator"] == label, "estimator"] = "hdcal"
    return s


def robustness_tables(results: Sequence[tuple[Any, DesignResult]], primary: Any | None, *,
                      ece_id: str, first_seed: int, gap: tuple[str, str]
                      ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The ``robustness`` and ``robustness_summary`` tables of the M2.12 analyses.

    Parameters
    ----------
    results : sequence of (Variant, DesignResult)
        :func:`medaudit.agreement.robustness.run_variants` output.
    primary : (Variant, DataFrame) or None
        The primary design as a variant (analysis ``primary``) with its
        ``fixed_policy_summary`` restricted to the refitted estimators: the rows every
        changed design is read against (no refit: fixed policies are fitted independently).
    ece_id, first_seed : the criterion id of the ECE and the shots' seed base.
    gap : (str, str)
        The family gap ``hi - lo`` (``agreement.gap_estimators``).

    Returns
    -------
    robustness : DataFrame
        Per analysis x parameter: the within-family :func:`comparisons` (``n_holds`` of
        ``n_settings``) and the family gap per institution and overall (criteria
        ``brier_score_difference``, ``<ece>_difference``).
    robustness_summary : DataFrame
        Per analysis x parameter the ``fixed_policy_summary`` of the changed design; the
        penalty oracle adds ``hdcal[C=oracle]`` rows (``chosen``, ``chosen_C``).
    """
    comp, summ = [], []

    def add(v: Any, s: pd.DataFrame) -> None:
        rows = pd.concat([comparisons(s), _gap_rows(s, gap, ece_id, v.protocol, first_seed)],
                         ignore_index=True)
        comp.append(_lead(rows, v))

    if primary is not None:
        v, s = primary
        add(v, s)
        summ.append(_lead(s, v))
    for v, res in results:
        s = summary_rows(pd.DataFrame(fixed_rows(res, v.protocol, ece_id)), first_seed)
        if v.analysis == "hdcal_penalty_oracle":
            labels = [x for x in v.estimators if parse_estimator(x)[0] == "hdcal"]
            for x in labels:
                add(_relabel(v, f"C={parse_estimator(x)[1]['C']:g}",
                             f"HD-Cal penalty C = {parse_estimator(x)[1]['C']:g}"),
                    _as_hdcal(s, x, labels))
            o = _oracle(s, labels)
            add(_relabel(v, "C=oracle", "HD-Cal at the grid's C with the lowest test mean in each "
                                         "setting and criterion (an oracle, not a policy)"),
                pd.concat([s[~s["estimator"].isin(labels)], o.assign(estimator="hdcal")],
                          ignore_index=True))
            s = pd.concat([s, o], ignore_index=True)
        else:
            add(v, s)
        summ.append(_lead(s, v))
    rob = pd.concat(comp, ignore_index=True) if comp else pd.DataFrame()
    for col in ("n_holds", "n_settings", "n_institutions", "change_seed"):
        if col in rob.columns:  # counts, NA where a row kind has none
            rob[col] = rob[col].astype("Int64")
    return rob, pd.concat(summ, ignore_index=True) if summ else pd.DataFrame()


def _relabel(v: Any, parameter: str, changed: str) -> Any:
    import dataclasses

    return dataclasses.replace(v, parameter=parameter, changed=changed)
