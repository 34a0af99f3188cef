"""Paper 001: Table 1's binomial p-values and Table 4's leaderboard ranks (M1.5, M1.8, M1.9).

* Table 1: the caption's counts (8/9 tasks for AP, 3/9 for AUROC) from the printed p-values; and
  which tie rule the printed p-values admit.  With all 1,000 replicates counted (ties as failures),
  a p-value is a binomial tail P(X >= k | 1000, 1/2); eight of the ten numeric values printed are
  no such tail at four decimals, so n < 1,000: tied (or undefined) replicates were left out.
  medaudit's default ``rank_stability_test(ties="exclude")`` reproduces every printed value from a
  replicate set with that many ties; ``ties="failure"`` on the same replicates does not.
* Table 4: ranks are computed from unrounded scores with ties at the minimum rank (M1.5), so
  each printed rank must lie between medaudit's ``min_rank`` of the printed (rounded) scores and
  that rank plus the size of its rounded tie, and the ranks must be a competition ranking.
  Table 4's values themselves cannot be rebuilt from the text: they need the CheXternal models'
  per-study predictions and the eight readers' labels, neither of which the paper gives
  (docs/published-numbers.md).
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import binom

from medaudit.stats import rank_stability_test
from medaudit.stats.annotation_bootstrap import min_rank
from tests.published import HALF, load, seed_text

TABLE1 = load("paper001_table1_binomial.csv")
TABLE4 = load("paper001_table4_leaderboard.csv")
N_REPLICATES = 1000  # "over 1,000 bootstrap iterations"


def _significant(printed: str) -> bool:
    return printed.startswith("<") or (not printed.startswith(">") and float(printed) < 0.05)


def test_table1_caption_counts():
    sig = TABLE1.assign(sig=TABLE1.p_printed.map(_significant)).groupby("comparison")["sig"].sum()
    assert TABLE1.task.nunique() == 9
    assert (sig["ap_vs_s_ap"], sig["auroc_vs_s_auroc"]) == (8, 3)  # "8/9 tasks for AP and 3/9 for AUROC"


def _tail(n: int) -> np.ndarray:
    k = np.arange(n + 1)
    return binom.sf(k - 1, n, 0.5)  # P(X >= k), scipy's binomtest(k, n, alternative="greater")


NUMERIC = sorted({float(p) for p in TABLE1.p_printed if p[0].isdigit()})


def test_table1_pvalues_are_not_binomial_tails_at_1000():
    at_1000 = [p for p in NUMERIC if (np.abs(_tail(N_REPLICATES) - p) <= HALF[4]).any()]
    assert len(NUMERIC) == 10 and at_1000 == [0.0001, 0.0036]


@pytest.mark.parametrize("printed", NUMERIC)
def test_table1_pvalues_follow_from_excluding_tied_replicates(printed):
    # the largest number of untied replicates n <= 1000 at which the printed value is a tail
    n, k = next((n, int(np.flatnonzero(np.abs(_tail(n) - printed) <= HALF[4])[0]))
                for n in range(N_REPLICATES, 0, -1) if (np.abs(_tail(n) - printed) <= HALF[4]).any())
    soft = np.r_[np.ones(k), np.zeros(n - k), np.full(N_REPLICATES - n, 0.5)]
    ordinary = np.r_[np.zeros(k), np.ones(n - k), np.full(N_REPLICATES - n, 0.5)]
    got = rank_stability_test(soft, ordinary)  # ties="exclude", the default
    assert got.n == n and round(got.pvalue, 4) == printed
    if n < N_REPLICATES:
        assert round(rank_stability_test(soft, ordinary, ties="failure").pvalue, 4) != printed


@pytest.mark.parametrize(("task", "metric"), sorted(set(zip(TABLE4.task, TABLE4.metric, strict=True))))
def test_table4_ranks_agree_with_the_printed_scores(task, metric):
    g = TABLE4[(TABLE4.task == task) & (TABLE4.metric == metric)]
    score, rank = g.score.to_numpy(), g["rank"].to_numpy().astype(float)
    low = min_rank(score)
    tie = np.array([(score == v).sum() for v in score])
    assert ((low <= rank) & (rank <= low + tie - 1)).all()
    np.testing.assert_array_equal(min_rank(-rank), rank)  # 1, 2, 3, 3, 3, 3, 7, ... : competition ranks


def test_table4_ranks_need_unrounded_scores():
    # equal printed scores with different ranks: the paper ranked unrounded values (M1.5)
    ate = TABLE4[(TABLE4.task == "Atelectasis") & (TABLE4.metric == "auroc")].set_index("model")
    assert ate.loc["desmond", "score"] == ate.loc["yww211", "score"] == 0.875
    assert (ate.loc["desmond", "rank"], ate.loc["yww211", "rank"]) == (9, 10)
    assert (TABLE4.groupby(["task", "metric"]).size() == 10).all() and TABLE4.task.nunique() == 5


def test_fixtures_are_the_seed_tables():
    text = seed_text("001")
    block = text.split("Table 4: Re-ranking", 1)[1].split("fig:bootstrap", 1)[0]
    lines = [ln for ln in block.splitlines() if "\t" in ln and ln.split("\t")[1][:1].isdigit()]
    rows = ["\t".join([m] + [x for met in ("auroc", "s_auroc", "ap", "s_ap")
                             for x in (f"{g.set_index('metric').loc[met, 'score']:.3f}",
                                       str(g.set_index("metric").loc[met, "rank"]))])
            for (_, m), g in TABLE4.groupby(["task", "model"], sort=False)]
    assert rows == lines
    t1 = text.split("Table 1: Binomial test", 1)[1].split("Appendix D", 1)[0].replace("$", "")
    printed = [ln.split("\t") for ln in t1.splitlines() if ln.count("\t") == 2 and "vs." not in ln]
    want = [[task, *g.p_printed] for task, g in TABLE1.groupby("task", sort=False)]
    assert printed == want
