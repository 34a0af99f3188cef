"""Benchmark the annotation bootstrap (paper 001, M1.7; issue 4's speed target).

Problem: 10 models x 5,000 items x 8 annotators x 1,000 replicates (binary votes, soft
label = mean vote, hard label = strict majority).  Each replicate resamples every item's
8 votes with replacement, rebuilds both labels, recomputes AUROC, AP, soft AUROC and soft
AP for all 10 models, re-ranks them and correlates with the original ranking (Spearman,
Kendall).  Target: seconds, not minutes.

Peer, measured in the same run: the straightforward loop a user would write -- per
replicate, numpy draws the resampled votes, then scikit-learn's ``roc_auc_score`` /
``average_precision_score`` per model on the hard label, the same two functions on the
duplicated weighted data set for the soft metrics (anchors T9: AP equal, AUROC plus the
half self-pair term), and ``scipy.stats.spearmanr`` / ``kendalltau`` -- timed on a few
replicates and scaled linearly to 1,000.

Prints a Markdown table (it does not edit BENCHMARKS.md).  Usage:
``python benchmarks/bench_labels.py [--quick]``.
"""

from __future__ import annotations

import argparse
import platform
import sys
import time
from pathlib import Path

import numpy as np
from scipy import stats
from sklearn.metrics import average_precision_score, roc_auc_score

from medaudit.stats.annotation_bootstrap import annotation_bootstrap


def problem(n_items: int, n_annotators: int, n_models: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    p = rng.beta(0.6, 0.6, n_items)
    votes = (rng.random((n_items, n_annotators)) < p[:, None]).astype(np.float64)
    scores = {f"m{j:02d}": 1 / (1 + np.exp(-(3 * (p - 0.5) + rng.normal(0, 0.5 + 0.1 * j, n_items))))
              for j in range(n_models)}
    return votes, scores


def peer_replicates(votes, scores, n_rep: int, seed: int = 1) -> float:
    """Seconds for ``n_rep`` replicates of the scikit-learn / scipy loop."""
    rng = np.random.default_rng(seed)
    n, a = votes.shape
    names = list(scores)

    def metrics(v):
        soft = v.mean(axis=1)
        hard = (soft > 0.5).astype(int)
        w = np.r_[soft, 1 - soft]
        y2 = np.r_[np.ones(n), np.zeros(n)]
        self_term = 0.5 * np.sum(soft * (1 - soft)) / (soft.sum() * (1 - soft).sum())
        out = []
        for m in names:
            s = scores[m]
            s2 = np.r_[s, s]
            out.append((roc_auc_score(hard, s), average_precision_score(hard, s),
                        roc_auc_score(y2, s2, sample_weight=w) + self_term,
                        average_precision_score(y2, s2, sample_weight=w)))
        return np.array(out)

    base = metrics(votes)
    t = time.perf_counter()
    for _ in range(n_rep):
        idx = rng.integers(0, a, size=(n, a))
        rep = metrics(np.take_along_axis(votes, idx, axis=1))
        for k in range(4):
            stats.spearmanr(rep[:, k], base[:, k])
            stats.kendalltau(rep[:, k], base[:, k])
    return time.perf_counter() - t


def ours(votes, scores, n_rep: int) -> tuple[float, object]:
    n, a = votes.shape
    item = np.repeat(np.arange(n), a)
    t = time.perf_counter()
    res = annotation_bootstrap(votes.ravel(), item, scores, n_resamples=n_rep, rng=2026)
    return time.perf_counter() - t, res


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="1,000 items and 100 replicates")
    args = ap.parse_args(argv)
    n_items, n_ann, n_models, B = (1000, 8, 10, 100) if args.quick else (5000, 8, 10, 1000)
    n_peer = 5 if args.quick else 10
    votes, scores = problem(n_items, n_ann, n_models)
    t_ours, res = ours(votes, scores, B)
    t_peer = peer_replicates(votes, scores, n_peer) * B / n_peer
    print(f"## Annotation bootstrap (issue 4): {n_models} models x {n_items:,} items x {n_ann} "
          f"annotators x {B:,} replicates\n")
    print(f"Machine: {platform.processor() or platform.machine()}, Python "
          f"{platform.python_version()}, numpy {np.__version__}.\n")
    print("| approach | wall time | per replicate |")
    print("|---|---|---|")
    print(f"| medaudit `annotation_bootstrap` (all 4 metrics, ranks, rho, tau) | {t_ours:.2f} s | "
          f"{1e3 * t_ours / B:.1f} ms |")
    print(f"| scikit-learn + scipy loop ({n_peer} replicates timed, scaled) | {t_peer:.1f} s | "
          f"{1e3 * t_peer / B:.0f} ms |")
    print(f"\nSpeed-up: {t_peer / t_ours:.0f}x.  Target (seconds, not minutes): "
          f"{'PASS' if t_ours < 60 else 'FAIL'}.")
    print("\nStability (mean Spearman rho): " + ", ".join(
        f"{m} {res.stability(m):.4f}" for m in res.metrics))


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from _sections import run_and_record

    run_and_record("bench_labels", "Annotation bootstrap (paper 001, issue 4)", main)
