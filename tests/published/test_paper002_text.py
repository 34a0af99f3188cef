"""Paper 002: the numbers of its running text, checked against each other (M2.9, M2.10, M2.13).

Tables I-III are absent from the extracted text, so every target is a sentence.  What the text
fixes by arithmetic is checked here: the contrast family and its BH counts against the Jaccard
overlap (medaudit ``fisher_exact``, ``adjust_pvalues`` and ``jaccard``), the decision counts,
the Brier and interval-audit percentages, the parse counts, and the reader-audit sizes.  One
printed number does not follow from the others: the parse success rate (99.93%) is not the
complement of 13 of 27,702 unparseable responses (99.95%), nor of 13 of either model's half.
Stochastic targets (the institution bootstrap, the interval audit) are checked on their own
designs in tests/agreement/test_design.py.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from medaudit.stats import adjust_pvalues, fisher_exact, jaccard
from tests.published import HALF, load, missing_quotes

T = load("paper002_text.csv").set_index("quantity")["value"]


def test_contrast_family_sizes():
    pairs = list(itertools.combinations(["mimic", "openi", "padchest"], 2))
    assert len(pairs) == T["n_institution_pairs"]
    assert T["n_findings"] * len(pairs) * T["n_primary_models"] == T["n_contrasts_per_metric"] == 36
    assert 2 * T["n_contrasts_per_metric"] == T["n_cell_intervals"] >= T["n_cell_intervals_excluding_zero"]


def test_bh_counts_and_the_jaccard_overlap_agree():
    m, alpha = int(T["n_contrasts_per_metric"]), T["bh_alpha"]
    # a contrast with no false positive at either institution has Fisher p = 1 and stays in the
    # family; BH never rejects it, so at most 36 - 7 can be significant
    zero = fisher_exact([[0, 18], [0, 240]])
    assert zero.pvalue == 1.0
    p = np.r_[np.ones(int(T["n_fpr_zero_event_contrasts"])), np.full(m - 7, 1e-6)]
    assert adjust_pvalues(p, method="bh", alpha=alpha).reject.sum() == m - 7 >= T["n_fpr_bh_significant"]
    # the 23 significant FPR contrasts are the two models' sets A and B over (finding, pair):
    # |A| + |B| = |A & B| + |A | B| = 6 + 17, whatever the split between the models
    shared, union = int(T["jaccard_shared"]), int(T["jaccard_union"])
    assert shared + union == T["n_fpr_bh_significant"] == T["shared_cells_fpr_bh_significant"]
    cells = list(range(union))
    for size_a in range(shared, union + 1):
        a, b = set(cells[:size_a]), set(cells[size_a - shared:])
        assert len(a) + len(b) == T["n_fpr_bh_significant"] and jaccard(a, b) == shared / union
    assert round(shared / union, 3) == T["jaccard"]


def test_decisions_and_selection_counts():
    n_inst, n_models = 3, int(T["n_primary_models"])
    assert n_inst * n_models == T["n_deployments"]
    assert T["n_deployments"] * T["n_budgets_nonzero"] == T["n_settings"]
    assert n_inst * n_models * T["n_budgets_nonzero"] * T["n_repetitions"] == T["n_decisions"] == 240
    picks = T[T.index.str.startswith("selected_")]
    assert picks.sum() == T["n_decisions"]  # every decision selects one of the seven
    assert T["selected_naive"] == T["gate_returned_naive"]  # naive is chosen only by the gate


def test_brier_percentages():
    sel, oracle, naive = T["brier_selector"], T["brier_oracle"], T["brier_naive"]
    assert round(100 * (sel - oracle) / oracle, 1) == T["relative_excess_percent"]
    assert round(100 * (naive - sel) / naive, 1) == T["selector_below_naive_percent"]
    # "the two leaders differ by 0.0003": the printed 0.0853 and 0.0855 differ by 0.0002, and
    # unrounded values behind them can differ by anything in (0.0001, 0.0003)
    bb, to = T["brier_beta_binomial"], T["brier_target_only"]
    assert to - bb - 2 * HALF[4] < T["leaders_brier_difference"] <= to - bb + 2 * HALF[4] + 1e-12
    gaps = T[["family_gap_mimic", "family_gap_openi", "family_gap_padchest"]].to_numpy()
    assert round(gaps.mean(), 4) == T["family_gap_mean"]
    assert (gaps.min(), gaps.max()) == (T["family_gap_low"], T["family_gap_high"])  # 3 clusters: 1/27 > 2.5%
    assert gaps[1:].mean() == pytest.approx(T["family_gap_without_mimic"], abs=HALF[4] + 1e-12)


def test_interval_audit_and_agreement_percentages():
    n = int(T["n_cell_evaluations"])
    covered = [k for k in range(n + 1) if round(100 * k / n, 1) == T["coverage_percent"]]
    assert covered == [1632, 1633]  # 87.0% of 1,876 is a whole number of cell-evaluations
    gap = T["carried_over_agreement_percent"] - T["receiving_site_agreement_percent"]
    assert round(gap) == T["hardest_gap_points"]  # 97.0% vs 60.2%: the 37-point gap of MedGemma at MIMIC


def test_parse_counts_and_the_success_rate_that_does_not_follow():
    bad, total = T["n_unparseable"], T["n_responses"]
    assert round(100 * bad / total, 3) == T["unparseable_percent"]
    assert total % 2 == 0 and total / 2 - T["n_studies_mimic"] - T["n_studies_padchest"] == 3851  # OpenI
    assert round(100 * (1 - bad / total), 2) == 99.95 != T["parse_success_percent"]
    assert round(100 * (1 - bad / (total / 2)), 2) == 99.91 != T["parse_success_percent"]


def test_reader_audit_sizes():
    assert T["n_reader_studies"] == 3 * T["n_reader_studies_per_institution"]
    assert T["n_reader_annotations"] == T["n_reader_studies"] * T["n_findings"]  # 150 studies x 6 findings
    assert T["n_reader_pairs_unique"] <= T["n_reader_pairs_evaluable"] <= T["n_reader_annotations"]


def test_quoted_sentences_are_in_the_text():
    assert missing_quotes(load("paper002_text.csv"), "002") == []
