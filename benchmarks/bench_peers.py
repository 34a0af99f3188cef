#!/usr/bin/env python
"""Benchmark the curve-type bootstraps of issue 17 against the plain AUROC interval.

Problem: n = 100,000 cases (30 % positive, binormal scores), B = 2,000 within-label
replicates.  Targets (issue 17): the partial-AUC interval and the ROC and precision-recall
bands each within 2x the wall time of the plain AUROC percentile interval on the same data,
measured in the same run (medians of three interleaved rounds: every method runs once per
round, in an order that rotates from round to round, so a change of load hits them all).

Peers measured in the same run: scikit-learn's ``roc_auc_score(max_fpr=)`` and
``roc_curve`` + ``np.interp`` in a loop over replicates (what a user writes without an
engine), timed on a few replicates and scaled linearly to B.

Usage: ``python benchmarks/bench_peers.py [--quick] [--write]`` (``--write`` records the
report in BENCHMARKS.md).  A script, not a test.
"""

from __future__ import annotations

import argparse
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _sections import run_and_record  # noqa: E402

from medaudit.stats import (  # noqa: E402
    bootstrap_ci,
    partial_roc_auc_ci,
    pauc_metric,
    precision_recall_band,
    roc_curve_band,
)


def _interleaved(fns: list, repeat: int) -> list[float]:
    """Median seconds of each of ``fns`` over ``repeat`` rounds, the order rotating per round."""
    times: list[list[float]] = [[] for _ in fns]
    for r in range(repeat):
        order = list(range(len(fns)))
        order = order[r % len(order):] + order[:r % len(order)]
        for i in order:
            t = time.perf_counter()
            fns[i]()
            times[i].append(time.perf_counter() - t)
    return [statistics.median(t) for t in times]


def _peer(y, s, n_rep: int, fn) -> float:
    """Seconds per replicate of a scikit-learn loop over within-label resamples."""
    from sklearn.metrics import roc_auc_score, roc_curve  # noqa: F401 - imported for fn

    rng = np.random.default_rng(1)
    pos, neg = np.flatnonzero(y == 1), np.flatnonzero(y == 0)
    t = time.perf_counter()
    for _ in range(n_rep):
        idx = np.r_[rng.choice(pos, pos.size), rng.choice(neg, neg.size)]
        fn(y[idx], s[idx])
    return (time.perf_counter() - t) / n_rep


def main(argv: list[str]) -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="n = 10,000 and B = 200")
    args = ap.parse_args(argv)
    n, b, repeat = (10_000, 200, 1) if args.quick else (100_000, 2_000, 3)
    rng = np.random.default_rng(0)
    y = (rng.random(n) < 0.3).astype(np.float64)
    s = rng.normal(size=n) + 1.0 * y
    kw = dict(n_resamples=b, rng=2026)
    rows = [
        ("plain AUROC interval: `bootstrap_ci(metric='roc_auc', design='within_label')`",
         lambda: bootstrap_ci(y, s, design="within_label", **kw)),
        ("partial AUC, Sp in [0.9, 1]: `partial_roc_auc_ci`",
         lambda: partial_roc_auc_ci(y, s, bounds=(0.9, 1), **kw)),
        ("partial AUC, Sp in [0.9, 1], McClish: `partial_roc_auc_ci(correct=True)`",
         lambda: partial_roc_auc_ci(y, s, bounds=(0.9, 1), correct=True, **kw)),
        ("partial AUC, Se in [0.9, 1]: `partial_roc_auc_ci(focus='sensitivity')`",
         lambda: partial_roc_auc_ci(y, s, bounds=(0.9, 1), focus="sensitivity", **kw)),
        ("partial AUC through the engine: `bootstrap_ci(metric=('pauc', {'sp': '0.9:1'}))`",
         lambda: bootstrap_ci(y, s, metric=pauc_metric((0.9, 1)), design="within_label", **kw)),
        ("ROC band, 101 specificities: `roc_curve_band`", lambda: roc_curve_band(y, s, **kw)),
        ("ROC band, pROC's 11 specificities", lambda: roc_curve_band(
            y, s, specificities=np.linspace(0, 1, 11), **kw)),
        ("PR band, 101 recalls: `precision_recall_band`", lambda: precision_recall_band(y, s, **kw)),
        ("PR band, interpolated precision: `precision_recall_band(method='interpolated')`",
         lambda: precision_recall_band(y, s, method="interpolated", **kw)),
    ]
    times = list(zip([label for label, _ in rows], _interleaved([fn for _, fn in rows], repeat),
                     strict=True))
    base = times[0][1]

    from sklearn.metrics import roc_auc_score, roc_curve

    grid = 1 - np.linspace(0, 1, 101)

    def band_once(yy, ss):
        fpr, tpr, _ = roc_curve(yy, ss)
        return np.interp(grid, fpr, tpr)

    n_peer = 3 if args.quick else 5
    peer_pauc = _peer(y, s, n_peer, lambda yy, ss: roc_auc_score(yy, ss, max_fpr=0.1)) * b
    peer_band = _peer(y, s, n_peer, band_once) * b

    print(f"Machine: {platform.machine()}, Python {platform.python_version()}, "
          f"numpy {np.__version__}; n = {n:,} (30 % positive), B = {b:,} within-label "
          f"replicates, medians of {repeat} interleaved rounds.\n")
    print("| approach | wall time | / plain AUROC |")
    print("|---|---|---|")
    for label, t in times:
        print(f"| {label} | {t:.2f} s | {t / base:.2f}x |")
    print(f"| peer: scikit-learn `roc_auc_score(max_fpr=0.1)` loop ({n_peer} replicates, scaled)"
          f" | {peer_pauc:.1f} s | {peer_pauc / base:.1f}x |")
    print(f"| peer: scikit-learn `roc_curve` + `np.interp` loop ({n_peer} replicates, scaled) | "
          f"{peer_band:.1f} s | {peer_band / base:.1f}x |")
    worst_pauc = max(t for label, t in times[1:5]) / base
    worst_band = max(t for label, t in times[5:]) / base
    ok = "PASS" if max(worst_pauc, worst_band) <= 2.0 else "FAIL"
    print(f"\nTarget: partial AUC and ROC/PR bands within 2x the plain AUROC interval "
          f"(worst: partial AUC {worst_pauc:.2f}x, band {worst_band:.2f}x): {ok}.")


if __name__ == "__main__":
    run_and_record("bench_peers", "Partial AUC, ROC and precision-recall bands (issue 17)", main)
