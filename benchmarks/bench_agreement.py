#!/usr/bin/env python
"""Benchmark of the paper-002 estimator grid (agreement design) against a row-level peer.

Run from the repository root::

    python benchmarks/bench_agreement.py                 # the full paper-sized grid
    python benchmarks/bench_agreement.py --repeats 2     # a fraction, extrapolated to 10

The grid: 10 estimators x 2 models x 3 target institutions x 5 budgets x R repeats
(LOIO, Set A) plus the strict selector's development folds (Set B, 7 candidates) for
every non-zero budget, GLMM included (3,000 SVI steps), on the simulated paper-002 table
at scale 1 (~120k evaluable narrative judgments).  The peer fits the logistic family the
usual way: sklearn on the expanded row-level design matrix (one-hot via pandas), timed on
a sample of folds and extrapolated to the grid's number of logistic fits.  Prints only;
writes nothing (BENCHMARKS.md is maintained elsewhere).  Target: full grid <= 15 min.

``--robustness`` times instead the M2.12 analyses (``medaudit.agreement.robustness``):
every analysis at its defaults (two deduplication rules + 5 size-matched draws, 6
left-out findings, 5 subsamples, the study-disjoint split, 5 HD-Cal penalties, the
binary matched set: 21 refits of the 6 fixed policies, no selection, no GLMM) on the same
table, extrapolated to 10 repeats.  Target: <= 15 min.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from pathlib import Path

import pandas as pd


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=10)
    ap.add_argument("--scale", type=float, default=1.0)
    ap.add_argument("--peer-folds", type=int, default=12)
    ap.add_argument("--robustness", action="store_true", help="time the M2.12 analyses instead")
    args = ap.parse_args(argv)
    if args.robustness:
        return _robustness(args)

    from medaudit.agreement.design import JudgmentData, fold_rows, run_design
    from medaudit.agreement.judgments import validate_judgments
    from medaudit.simulate import simulate_paper002

    print(f"python {platform.python_version()}, {os.cpu_count()} CPUs, load {os.getloadavg()}")
    t0 = time.perf_counter()
    raw = simulate_paper002(rng=2026, scale=args.scale)
    ev, _ = validate_judgments(raw, source="bench")
    nar = ev[ev["protocol"] == "narrative"]
    data = JudgmentData.from_columns(model=nar["model"].to_numpy(),
                                     institution=nar["institution"].to_numpy(),
                                     finding=nar["finding"].to_numpy(),
                                     direction=nar["direction"].to_numpy(),
                                     correct=nar["correct"].to_numpy(),
                                     study_id=nar["study_id"].to_numpy())
    t_prep = time.perf_counter() - t0
    print(f"simulate + validate: {t_prep:.1f} s; {len(nar)} evaluable narrative judgments")

    t0 = time.perf_counter()
    res = run_design(data, repeats=args.repeats)
    t_grid = time.perf_counter() - t0
    n_fits = len(res.loio) * len(res.settings["estimators"]) + len(res.dev) * len(
        res.settings["candidates"])
    full = t_grid * 10 / args.repeats
    print(f"medaudit grid ({args.repeats} repeats): {t_grid:.1f} s for {len(res.loio)} LOIO folds, "
          f"{len(res.dev)} development folds, {len(res.decisions)} decisions, {n_fits} fits "
          f"(GLMM compile included); extrapolated to 10 repeats: {full:.0f} s "
          f"-> {'PASS' if full <= 900 else 'FAIL'} (target <= 900 s)")

    # peer: row-level sklearn fits of the four logistic estimators on expanded one-hot rows
    from sklearn.linear_model import LogisticRegression

    keys = [f.key for f in res.loio if f.key.budget > 0][: args.peer_folds]
    t0 = time.perf_counter()
    for key in keys:
        pool, _ = fold_rows(data, key)
        df = pd.DataFrame({"r": data.direction[pool], "k": data.finding[pool],
                           "d": data.institution[pool]})
        df["dk"] = df["d"].astype(str) + ":" + df["k"].astype(str)
        X = pd.get_dummies(df.astype(str), drop_first=True).to_numpy(float)
        y = data.correct[pool]
        for _ in range(4):  # additive, hdcal, hdcal_weighted, target_only (~ same cost)
            LogisticRegression(C=1.0, max_iter=1000).fit(X, y)
    per_fold = (time.perf_counter() - t0) / max(len(keys), 1)
    n_logistic_folds = len(res.loio) * 10 / args.repeats + len(res.dev) * 10 / args.repeats
    print(f"peer (row-level sklearn, 4 logistic fits per fold): {per_fold:.2f} s per fold; "
          f"extrapolated to {n_logistic_folds:.0f} folds: {per_fold * n_logistic_folds:.0f} s "
          "(logistic family only; no GLMM, HAS, scoring)")
    return 0


def _robustness(args: argparse.Namespace) -> int:
    from medaudit.agreement.judgments import validate_judgments
    from medaudit.agreement.robustness import ANALYSES, RobustnessConfig, run_variants, variants
    from medaudit.simulate import simulate_paper002

    print(f"python {platform.python_version()}, {os.cpu_count()} CPUs, load {os.getloadavg()}")
    raw = simulate_paper002(rng=2026, scale=args.scale)
    tables = {p: validate_judgments(raw, uncertain=p, source="bench")[0]
              for p in ("exclude", "negative", "positive")}
    cfg = RobustnessConfig(analyses=list(ANALYSES))
    t0 = time.perf_counter()
    items = variants(tables["exclude"], protocol="narrative", config=cfg, uncertain_tables=tables)
    t_build = time.perf_counter() - t0
    t0 = time.perf_counter()
    out = run_variants(items, budgets=(0, 25, 50, 100, 200), repeats=args.repeats, first_seed=42,
                       n_bins=10)
    t_fit = time.perf_counter() - t0
    n_fits = sum(len(r.loio) * len(r.settings["estimators"]) for _, r in out)
    full = t_build + t_fit * 10 / args.repeats
    print(f"robustness: {len(items)} changed designs built in {t_build:.1f} s; fitted in "
          f"{t_fit:.1f} s ({args.repeats} repeats, {n_fits} estimator fits); extrapolated to 10 "
          f"repeats: {full:.0f} s -> {'PASS' if full <= 900 else 'FAIL'} (target <= 900 s)")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from _sections import run_and_record

    run_and_record("bench_agreement", "Reliability-estimator grid (paper 002, issue 5)", main)
