"""Recurring local validation: claims evaluated per period and cumulatively, corrected for repeated looks.

A site appends a batch of cases every period (a month, say) and asks again whether each
claim it was given still holds.  :func:`monitor_claims` evaluates every claim at every
period in two scopes,

* ``"cumulative"`` — all labelled cases up to and including the period (the best estimate
  while nothing changes);
* ``"period"`` — that period's cases alone (what shows a change quickly),

with one declared correction for the repeated looks:

* ``"confseq"`` — anytime-valid: the cumulative scope uses a confidence sequence
  (:func:`~medaudit.stats.proportion_cs` for a rate, :func:`~medaudit.stats.auroc_cs` for
  an AUROC); the period scope, whose periods are separate samples, gives period *k* the
  error ``alpha / (k (k + 1))`` (:func:`~medaudit.stats.sequential.union_alpha`), which sums
  to ``alpha`` over any number of periods, each period's interval again a confidence
  sequence (valid however often the period is looked at);
* ``"alpha_spending"`` — over ``planned_looks`` declared in advance: repeated confidence
  intervals for the cumulative scope (:func:`~medaudit.stats.proportion_rci`,
  :func:`~medaudit.stats.auroc_rci`), and for the period scope the spending increment of
  period *k*, ``alpha(k/K) - alpha((k-1)/K)``, as that period's error (the increments sum to
  ``alpha``); the exact Clopper-Pearson interval for a rate, DeLong's for an AUROC;
* ``"none"`` — an ordinary interval at every look (Wilson, DeLong): false alarms grow with
  the number of looks; kept to show how much.

A claim's verdict at a look follows the audit's rule for "metric ≥ level": ``holds`` when
the interval's lower end reaches the level, ``does not hold`` when its upper end is below
it, ``unresolved`` otherwise, ``not assessable`` when the look has no case of the class the
claim needs (or, for an AUROC, not both classes).  Under either correction the chance that
a claim true at every period is ever declared ``does not hold`` is at most ``alpha`` in
each scope.  The change log lists every look whose verdict differs from the previous one.

Labels may arrive late: rows whose label is NaN count as ``n_unlabelled`` and are left out
of the claims (their scores still count for drift, :func:`~medaudit.stats.drift.score_drift`).
The decision rule at a threshold is ``score >= threshold`` (positive).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import special

from medaudit._validation import as_1d_float, check_fraction, check_option
from medaudit.exceptions import MedauditError
from medaudit.stats.drift import ordered_categories, period_order
from medaudit.stats.sequential import (
    SPENDING_FUNCTIONS,
    _auc_counts,
    _hoeffding,
    _mixture_bounds,
    auroc_cs,
    auroc_rci,
    proportion_cs,
    proportion_rci,
    spending_function,
    union_alpha,
    wilson_interval,
)

__all__ = ["MonitorClaim", "MonitorResult", "monitor_claims", "CORRECTIONS", "SCOPES",
           "SERIES_COLUMNS", "CHANGE_COLUMNS", "VERDICTS", "DEFAULT_HORIZON", "count_changes"]

Correction = Literal["confseq", "alpha_spending", "none"]
CORRECTIONS = ("confseq", "alpha_spending", "none")
SCOPES = ("cumulative", "period")
CRITERIA = ("sensitivity", "specificity", "roc_auc")
VERDICTS = ("holds", "does not hold", "unresolved", "not assessable")
#: looks the confidence sequence of a rate is tuned for when no plan is declared (a year of
#: monthly looks); the sequence is valid for any number of looks whatever this is
DEFAULT_HORIZON = 12
SERIES_COLUMNS = ("claim_id", "claim", "model", "criterion", "threshold", "level", "scope",
                  "period", "look", "n_pos", "n_neg", "n_unlabelled", "estimate", "ci_low",
                  "ci_high", "verdict", "correction", "method", "alpha_look", "confidence_level",
                  "design", "n_resamples", "seed", "family")
CHANGE_COLUMNS = ("claim_id", "claim", "scope", "period", "look", "verdict_before", "verdict",
                  "event", "text")
_SHORT = {"sensitivity": "Se", "specificity": "Sp"}


def _num(x: float) -> str:
    """A number in a sentence: the shortest text that reads back to it (no rounding)."""
    return repr(float(x))


@dataclass(frozen=True, slots=True, kw_only=True)
class MonitorClaim:
    """A claim a site keeps checking: ``criterion >= level`` (a rate at a fixed threshold, or AUROC).

    Parameters
    ----------
    claim_id : str
        Identifier carried into every row (e.g. the source claim's id).
    criterion : {"sensitivity", "specificity", "roc_auc"}
    level : float
        The claimed level, in (0, 1).
    threshold : float, optional
        The fixed threshold of a rate claim (decision ``score >= threshold``); required for
        sensitivity and specificity, refused for AUROC.
    score : str, default="score"
        The table column holding this claim's scores (one column per model).
    text : str, optional
        How the claim reads in the change log; default e.g. ``"Se at τ = 0.42 ≥ 0.85"``.
    """

    claim_id: str
    criterion: str
    level: float
    threshold: float | None = None
    score: str = "score"
    text: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.claim_id, str) or not self.claim_id:
            raise MedauditError(f"claim_id must be a non-empty string; got {self.claim_id!r}.")
        check_option(self.criterion, CRITERIA, name=f"claim {self.claim_id}: criterion")
        check_fraction(self.level, name=f"claim {self.claim_id}: level")
        if self.criterion == "roc_auc":
            if self.threshold is not None:
                raise MedauditError(f"claim {self.claim_id}: an AUROC claim has no threshold; got "
                                    f"threshold={self.threshold!r}.")
        elif not isinstance(self.threshold, (int, float, np.integer, np.floating)) or isinstance(
                self.threshold, bool) or not math.isfinite(self.threshold):
            raise MedauditError(f"claim {self.claim_id}: a {self.criterion} claim needs a fixed "
                                f"numeric threshold (the source's τ); got {self.threshold!r}.")

    @property
    def description(self) -> str:
        """The claim in words (``text`` when given)."""
        if self.text:
            return self.text
        model = "" if self.score == "score" else f"{self.score}: "
        if self.criterion == "roc_auc":
            return f"{model}AUROC ≥ {_num(self.level)}"
        return (f"{model}{_SHORT[self.criterion]} at τ = {_num(self.threshold)} ≥ "
                f"{_num(self.level)}")


@dataclass(frozen=True, slots=True, kw_only=True)
class MonitorResult:
    """The time series (one row per claim x scope x period) and the verdict-change log."""

    series: tuple[dict[str, Any], ...]
    changes: tuple[dict[str, Any], ...]
    periods: tuple[Any, ...]
    options: dict[str, Any] = field(default_factory=dict)

    def series_records(self) -> list[dict[str, Any]]:
        """The series as plain dicts with :data:`SERIES_COLUMNS`."""
        return [dict(r) for r in self.series]

    def change_records(self) -> list[dict[str, Any]]:
        """The change log as plain dicts with :data:`CHANGE_COLUMNS`."""
        return [dict(r) for r in self.changes]

    @property
    def n_changes(self) -> int:
        """Entries of the log that change a verdict (each claim x scope's first verdict,
        logged with ``verdict_before`` None, is where the log starts, not a change)."""
        return count_changes(self.change_records())

    def tables(self) -> dict[str, Any]:
        """``{"series": DataFrame, "changes": DataFrame}`` (pandas imported here)."""
        import pandas as pd

        return {"series": pd.DataFrame(self.series_records(), columns=list(SERIES_COLUMNS)),
                "changes": pd.DataFrame(self.change_records(), columns=list(CHANGE_COLUMNS))}


# ----------------------------------------------------------------------------- intervals

def _clopper_pearson(s: NDArray[np.float64], n: NDArray[np.float64], alpha: NDArray[np.float64]
                     ) -> tuple[NDArray[np.float64], ...]:
    """Estimate and exact (Clopper-Pearson) two-sided interval at error ``alpha`` per look."""
    with np.errstate(invalid="ignore", divide="ignore"):
        est = np.where(n > 0, s / np.where(n > 0, n, 1.0), np.nan)
        lo = np.where(s > 0, special.betaincinv(np.maximum(s, 1e-300), n - s + 1, alpha / 2), 0.0)
        hi = np.where(s < n, special.betaincinv(s + 1, np.maximum(n - s, 1e-300), 1 - alpha / 2),
                      1.0)
    return est, np.where(n > 0, lo, 0.0), np.where(n > 0, hi, 1.0)


def _period_alpha(correction: str, k: NDArray[np.float64], alpha: float, spending: str,
                  planned: int | None) -> NDArray[np.float64]:
    """Error of period k's own interval: open-ended union, spending increment, or alpha."""
    if correction == "confseq":
        return union_alpha(k, alpha)
    if correction == "alpha_spending":
        spent = spending_function(np.r_[0.0, k] / planned, alpha=alpha, spending=spending)
        return np.diff(spent)
    return np.full(k.size, alpha)


def _rate_intervals(scope: str, succ: NDArray[np.float64], trials: NDArray[np.float64], *,
                    correction: str, alpha: float, spending: str, planned: int | None,
                    t_opt: float) -> tuple[NDArray[np.float64], ...]:
    """Estimate, interval and per-look error of a rate; ``succ``/``trials`` are per period."""
    k = np.arange(1, succ.size + 1, dtype=float)
    if scope == "cumulative":
        s, n = np.cumsum(succ), np.cumsum(trials)
        if correction == "confseq":
            r = proportion_cs(s, n, confidence_level=1 - alpha, t_opt=t_opt)
            return r.estimate, r.ci_low, r.ci_high, r.alpha_look, r.method
        if correction == "alpha_spending":
            r = proportion_rci(s, n, confidence_level=1 - alpha, spending=spending,
                               planned_looks=planned)
            return r.estimate, r.ci_low, r.ci_high, r.alpha_look, r.method
        a = np.full(s.size, alpha)
        method = "Wilson interval at every look (no correction)"
    else:
        s, n = succ, trials
        a = _period_alpha(correction, k, alpha, spending, planned)
        if correction == "confseq":
            est, lo, hi = _mixture_bounds(s, n, alpha=a, t_opt=t_opt, alpha_opt=a)
            return (est, lo, hi, a, "beta-binomial mixture confidence sequence per period at "
                    "alpha/(k(k+1))")
        if correction == "alpha_spending":
            # exact per period: the union bound over periods then holds without approximation
            # (Wilson's tails are uneven near 0 and 1 and overshoot at small errors)
            est, lo, hi = _clopper_pearson(s, n, a)
            return est, lo, hi, a, "Clopper-Pearson interval per period at the spending increment"
        method = "Wilson interval per period (no correction)"
    with np.errstate(invalid="ignore", divide="ignore"):
        est = np.where(n > 0, s / np.where(n > 0, n, 1.0), np.nan)
    lo, hi = wilson_interval(s, n, special.ndtri(1.0 - a / 2.0))
    return est, lo, hi, a, method


def _auc_intervals(scope: str, y: NDArray[np.float64], s: NDArray[np.float64],
                   ends: NDArray[np.int64], *, correction: str, alpha: float, spending: str,
                   planned: int | None) -> tuple[NDArray[np.float64], ...]:
    """AUROC estimate, interval and per-look error; ``ends[k]`` closes period k in (y, s)."""
    k = np.arange(1, ends.size + 1, dtype=float)
    if scope == "cumulative":
        if correction == "confseq":
            r = auroc_cs(y, s, looks=ends, confidence_level=1 - alpha)
            return r.estimate, r.ci_low, r.ci_high, r.alpha_look, r.method
        if correction == "alpha_spending":
            r = auroc_rci(y, s, looks=ends, confidence_level=1 - alpha, spending=spending,
                          planned_looks=planned)
            return r.estimate, r.ci_low, r.ci_high, r.alpha_look, r.method
        auc, n_pos, n_neg, se = _auc_counts(y, s, ends)
        a = np.full(ends.size, alpha)
        method = "DeLong interval at every look (no correction)"
    else:
        starts = np.r_[0, ends[:-1]]
        parts = [_auc_counts(y[b:e], s[b:e], np.array([e - b])) for b, e in zip(starts, ends,
                                                                                 strict=True)]
        auc, n_pos, n_neg, se = (np.array([p[i][0] for p in parts]) for i in range(4))
        a = _period_alpha(correction, k, alpha, spending, planned)
        if correction == "confseq":
            lo, hi = _hoeffding(auc, n_pos, n_neg, a)
            return auc, lo, hi, a, "Hoeffding U-statistic bound per period at alpha/(k(k+1))"
        method = ("DeLong interval per period at the spending increment"
                  if correction == "alpha_spending" else "DeLong interval per period (no correction)")
    half = special.ndtri(1.0 - a / 2.0) * se
    ok = ~np.isnan(auc) & ~np.isnan(se)
    lo = np.where(ok, np.clip(np.nan_to_num(auc - half), 0.0, 1.0), 0.0)
    hi = np.where(ok, np.clip(np.nan_to_num(auc + half), 0.0, 1.0), 1.0)
    return auc, lo, hi, a, method


def _verdict(est: float, lo: float, hi: float, level: float, assessable: bool) -> str:
    if not assessable or math.isnan(est):
        return "not assessable"
    if lo >= level:
        return "holds"
    if hi < level:
        return "does not hold"
    return "unresolved"


def count_changes(records: Any) -> int:
    """How many entries of a change log (records or a DataFrame with ``verdict_before``)
    change a verdict: the first verdict of each claim x scope starts the log and has no
    verdict before it."""
    rows = records.to_dict("records") if hasattr(records, "columns") else records
    # "no verdict before" is None as logged, NaN or "" once the log has been through a CSV
    return sum(not (v is None or v == "" or (isinstance(v, float) and math.isnan(v)))
               for v in (r.get("verdict_before") for r in rows))


def _event(before: str | None, after: str) -> str:
    if after == "does not hold":
        return "stopped holding" if before == "holds" else "does not hold"
    if after == "holds":
        return "holds again" if before == "does not hold" else "holds"
    if after == "unresolved":
        return "became unresolved" if before is not None else "is unresolved"
    return "cannot be assessed"


# ----------------------------------------------------------------------------- the engine

def _listed(values: Any, name: str) -> list[Any]:
    try:
        return list(values)
    except TypeError:
        raise MedauditError(f"{name} must be a list; got {type(values).__name__}.") from None


def _column(table: Mapping[str, ArrayLike], name: str, what: str) -> NDArray[Any]:
    if not (hasattr(table, "columns") or isinstance(table, Mapping)):
        raise MedauditError(f"the table must be a DataFrame or a mapping of column name -> values; "
                            f"got {type(table).__name__}.")
    try:
        present = name in table
    except TypeError:
        present = False
    if not present:
        cols = list(getattr(table, "columns", None) if hasattr(table, "columns") else table.keys())
        raise MedauditError(f"the table has no {what} column {name!r}; it has {cols[:12]!r}. Name "
                            f"the column with {'the claim score=' if what == 'score' else what + '='}.")
    col = table[name]
    # a list keeps its values: numpy would turn [nan, "p1"] into the text "nan"
    return np.asarray(col, dtype=object) if isinstance(col, (list, tuple)) else np.asarray(col)


def _labels(raw: NDArray[Any], name: str) -> NDArray[np.float64]:
    try:
        y = np.asarray(raw, dtype=np.float64)
    except (TypeError, ValueError):
        raise MedauditError(f"column {name!r} must hold 0, 1 or empty (not labelled yet); it has "
                            "text.") from None
    known = ~np.isnan(y)
    bad = known & (y != 0) & (y != 1)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise MedauditError(f"column {name!r}, row {i + 1}: {float(y[i])!r} is not a label; use 1 "
                            "(positive), 0 (negative) or leave it empty (not labelled yet).")
    return y


def monitor_claims(table: Mapping[str, ArrayLike], claims: Sequence[MonitorClaim], *,
                   period: str = "period", label: str = "label",
                   periods: Sequence[Any] | None = None, correction: Correction = "confseq",
                   confidence_level: float = 0.95, scopes: Sequence[str] = SCOPES,
                   spending: str = "pocock", planned_looks: int | None = None,
                   t_opt: float | None = None) -> MonitorResult:
    """Evaluate each claim at every period, cumulatively and per period, with a correction for repeated looks.

    Parameters
    ----------
    table : mapping of column name to array-like
        A long table (a pandas DataFrame or a dict of columns): one row per case with its
        ``period``, its ``label`` (1, 0, or NaN when not known yet) and one score column per
        model (named by each claim's ``score``).
    claims : MonitorClaim or sequence of MonitorClaim
    period, label : str, default "period", "label"
        Column names.
    periods : sequence, optional
        The periods in order (every value of the period column, and any period without
        cases); default the order of an ordered categorical period column, else the sorted
        values.  Each period is one look.
    correction : {"confseq", "alpha_spending", "none"}, default="confseq"
        How the repeated looks are paid for (see the module notes).
    confidence_level : float, default=0.95
        ``1 - alpha``: the chance, in each scope, that a claim true at every period is never
        declared not to hold (``"none"`` gives this per look only).
    scopes : str or sequence of {"cumulative", "period"}, default both
    spending : {"pocock", "obrien_fleming"}, default="pocock"
        Spending function of ``"alpha_spending"``.  Pocock-type spends evenly, which suits
        monitoring where an early alarm matters; O'Brien-Fleming-type keeps most of the error
        for the last looks.
    planned_looks : int, optional
        Looks declared before the first one; required by ``"alpha_spending"`` (more periods
        than planned are refused); with ``"confseq"`` it sets the tuning of rate sequences.
    t_opt : float, optional
        Trials at which a rate's cumulative sequence is tightest; the period scope uses
        ``t_opt / planned_looks`` (or / 12).  Default: the trials of the first period that has
        any, times ``planned_looks`` (or 12), and that period's trials for the period scope —
        a function of the first period's class counts only, so rerunning with more periods
        leaves earlier rows unchanged.

    Returns
    -------
    MonitorResult
        ``series`` rows with :data:`SERIES_COLUMNS`, claims in the order given, then scope,
        then period; ``changes`` with :data:`CHANGE_COLUMNS`.

    Notes
    -----
    The guarantees assume the cases of a period are independent draws given their labels
    and that when to look is fixed by the calendar (the periods), not by the scores.  A
    rate's trials are the positives (sensitivity) or the negatives (specificity).  See
    :mod:`medaudit.stats.sequential` for each interval and its witnesses; the false-alarm
    rate and the detection of a drop are simulated in tests/stats/test_monitor.py.

    Examples
    --------
    >>> table = {"period": ["2026-01"] * 4 + ["2026-02"] * 4,
    ...          "label": [1, 1, 0, 0, 1, 1, 0, float("nan")],
    ...          "score": [0.9, 0.7, 0.2, 0.6, 0.3, 0.8, 0.1, 0.5]}
    >>> claim = MonitorClaim(claim_id="S1", criterion="sensitivity", threshold=0.5, level=0.8)
    >>> r = monitor_claims(table, [claim], scopes=["cumulative"])
    >>> [(row["period"], row["n_pos"], row["estimate"], row["verdict"]) for row in r.series]
    [('2026-01', 2, 1.0, 'unresolved'), ('2026-02', 4, 0.75, 'unresolved')]
    >>> r.series[1]["n_unlabelled"]
    1
    """
    corr = check_option(correction, CORRECTIONS, name="correction")
    level = check_fraction(confidence_level, name="confidence_level")
    alpha = 1.0 - level
    spend = check_option(spending, SPENDING_FUNCTIONS, name="spending")
    # one scope or one claim may be given alone: a string is one scope, not its letters
    scope_list = [check_option(sc, SCOPES, name="scopes")
                  for sc in ([scopes] if isinstance(scopes, str) else _listed(scopes, "scopes"))]
    if not scope_list:
        raise MedauditError("scopes is empty; give 'cumulative', 'period' or both.")
    claims = [claims] if isinstance(claims, MonitorClaim) else _listed(claims, "claims")
    if not claims or not all(isinstance(c, MonitorClaim) for c in claims):
        raise MedauditError("claims must be a non-empty list of MonitorClaim.")
    ids = [c.claim_id for c in claims]
    if len(set(ids)) != len(ids):
        raise MedauditError(f"claim ids must be unique; {sorted({i for i in ids if ids.count(i) > 1})!r}"
                            " appear more than once.")
    per = _column(table, period, "period").astype(object)
    y = _labels(_column(table, label, "label"), label)
    if per.ndim != 1 or y.shape != per.shape:
        raise MedauditError(f"columns {period!r} and {label!r} must have one value per row.")
    # an ordered categorical column gives the order of the looks (not its values sorted)
    order = period_order(per, ordered_categories(table[period]) if periods is None else periods)
    n_periods = len(order)
    if corr == "alpha_spending":
        if planned_looks is None:
            raise MedauditError("correction='alpha_spending' needs planned_looks: the number of "
                                "looks declared before the first one (or use 'confseq', which "
                                "needs no plan).")
    if planned_looks is not None and (isinstance(planned_looks, bool) or not isinstance(
            planned_looks, (int, np.integer)) or planned_looks < 1):
        raise MedauditError(f"planned_looks must be a positive integer; got {planned_looks!r}.")
    if corr == "alpha_spending" and n_periods > planned_looks:
        raise MedauditError(
            f"{n_periods} periods but only {planned_looks} planned looks: the alpha-spending plan "
            "is used up after its last look. Declare the plan's length before looking, or use "
            "correction='confseq'.")
    if t_opt is not None and not (isinstance(t_opt, (int, float, np.integer, np.floating))
                                  and not isinstance(t_opt, bool) and t_opt > 0):
        raise MedauditError(f"t_opt must be a positive number of trials; got {t_opt!r}.")
    rank = {p: i for i, p in enumerate(order)}
    pidx = np.array([rank[p] for p in per.tolist()], dtype=np.int64)
    arrival = np.argsort(pidx, kind="stable")  # period order, table order within a period
    labelled = ~np.isnan(y)
    unl = np.bincount(pidx[~labelled], minlength=n_periods)
    horizon = planned_looks or DEFAULT_HORIZON

    series: list[dict[str, Any]] = []
    changes: list[dict[str, Any]] = []
    for c in claims:
        sc = as_1d_float(_column(table, c.score, "score"), name=f"column {c.score!r}")
        if sc.size != y.size:
            raise MedauditError(f"column {c.score!r} must have one value per row.")
        idx = arrival[labelled[arrival]]
        yy, ss, pp = y[idx], sc[idx], pidx[idx]
        n_pos = np.bincount(pp, weights=yy, minlength=n_periods)
        n_neg = np.bincount(pp, minlength=n_periods) - n_pos
        if c.criterion == "roc_auc":
            ends = np.cumsum(np.bincount(pp, minlength=n_periods))
        else:
            cls = 1.0 if c.criterion == "sensitivity" else 0.0
            hit = (ss >= c.threshold) if cls == 1.0 else (ss < c.threshold)
            succ = np.bincount(pp, weights=((yy == cls) & hit).astype(float), minlength=n_periods)
            trials = n_pos if cls == 1.0 else n_neg
            first = trials[trials > 0]
            t1 = float(first[0]) if first.size else 1.0
        for scope in scope_list:
            if c.criterion == "roc_auc":
                est, lo, hi, a, method = _auc_intervals(scope, yy, ss, ends, correction=corr,
                                                        alpha=alpha, spending=spend,
                                                        planned=planned_looks)
            else:
                tune = (float(t_opt) if t_opt is not None else t1 * horizon) if (
                    scope == "cumulative") else (float(t_opt) / horizon if t_opt is not None else t1)
                est, lo, hi, a, method = _rate_intervals(scope, succ, trials, correction=corr,
                                                         alpha=alpha, spending=spend,
                                                         planned=planned_looks, t_opt=tune)
            cp = np.cumsum(n_pos) if scope == "cumulative" else n_pos
            cn = np.cumsum(n_neg) if scope == "cumulative" else n_neg
            before = None
            for k, p in enumerate(order):
                if c.criterion == "roc_auc":
                    assessable = cp[k] > 0 and cn[k] > 0
                else:
                    assessable = (cp[k] if c.criterion == "sensitivity" else cn[k]) > 0
                verdict = _verdict(float(est[k]), float(lo[k]), float(hi[k]), c.level, assessable)
                series.append({
                    "claim_id": c.claim_id, "claim": c.description, "model": c.score,
                    "criterion": c.criterion, "threshold": c.threshold, "level": c.level,
                    "scope": scope, "period": p, "look": k + 1, "n_pos": int(cp[k]),
                    "n_neg": int(cn[k]),
                    "n_unlabelled": int(np.cumsum(unl)[k] if scope == "cumulative" else unl[k]),
                    "estimate": float(est[k]), "ci_low": float(lo[k]), "ci_high": float(hi[k]),
                    "verdict": verdict, "correction": corr, "method": method,
                    "alpha_look": float(a[k]), "confidence_level": level,
                    "design": "cumulative looks" if scope == "cumulative" else "one look per period",
                    "n_resamples": None, "seed": None,
                    "family": f"monitor|{c.claim_id}|{scope}|{corr}"})
                if verdict != before:
                    event = _event(before, verdict)
                    where = (f"in {p}" if before is not None
                             else f"at the first look, {p}")  # where the log starts: no change
                    changes.append({
                        "claim_id": c.claim_id, "claim": c.description, "scope": scope,
                        "period": p, "look": k + 1, "verdict_before": before, "verdict": verdict,
                        "event": event,
                        "text": f"{c.description} {event} {where} ({scope}, {corr})"})
                before = verdict
    return MonitorResult(series=tuple(series), changes=tuple(changes), periods=tuple(order),
                         options={"correction": corr, "confidence_level": level,
                                  "spending": spend if corr == "alpha_spending" else None,
                                  "planned_looks": planned_looks, "scopes": scope_list,
                                  "t_opt": t_opt, "decision_rule": "score >= threshold"})
