"""Paper 000, supervised model: Section 2.9 split, Table 19 counts, Table 20 deltas (M0.12, M0.13).

Arithmetic the paper's own numbers must satisfy: the 80/20 class-stratified split of TBX11K
training (Section 2.9), Table 19's original - excluded = retained = TB + non-TB in every row
and the 313 screened images, Table 20's delta = retrained - original (to its four decimals)
and the Section 3.6 rounded restatements and source-to-external gaps.
"""

from __future__ import annotations

import pytest

from tests.published import HALF, load

EX = load("paper000_tables19_20_exclusion.csv").set_index(["table", "cohort", "quantity"])["value"]
COUNTS = load("paper000_table1_cohorts.csv").pivot(index="cohort", columns="quantity", values="value")
TEXT = load("paper000_text.csv").set_index(["quantity", "cohort"])["value"]


def test_section_2_9_split_is_80_20_within_each_class():
    c = COUNTS.loc["tbx11k-train"]
    opt_tb, sel_tb = TEXT["n_optimisation_tb", "tbx11k-train"], TEXT["n_selection_tb", "tbx11k-train"]
    assert (opt_tb, sel_tb) == (0.8 * c.n_tb, 0.2 * c.n_tb)
    per_negative = 0.8 * c.n_healthy  # 2,400 healthy and 2,400 sick
    assert TEXT["n_optimisation", "tbx11k-train"] == opt_tb + 2 * per_negative
    assert TEXT["n_selection", "tbx11k-train"] == sel_tb + 2 * 0.2 * c.n_sick
    assert TEXT["n_optimisation", "tbx11k-train"] + TEXT["n_selection", "tbx11k-train"] == c.n_tb + c.n_non_tb


def test_table19_rows_add_up():
    cohorts = ["montgomery", "shenzhen", "tbx11k-train", "tbx11k-val"]
    for cohort in cohorts:
        row = {q: EX[19, cohort, q]
               for q in ("original", "excluded", "retained", "tb_retained", "non_tb_retained")}
        assert row["original"] == COUNTS.loc[cohort, "n_tb"] + COUNTS.loc[cohort, "n_non_tb"]  # Table 1
        assert row["original"] - row["excluded"] == row["retained"]
        assert row["retained"] == row["tb_retained"] + row["non_tb_retained"]
        assert row["tb_retained"] <= COUNTS.loc[cohort, "n_tb"]
    # the excluded images are the 313 the 249 candidate pairs involve
    assert sum(EX[19, c, "excluded"] for c in cohorts) == EX[19, "all", "candidate_images"] == 313
    assert EX[19, "tbx11k-train", "retained_optimisation"] + EX[19, "tbx11k-train", "retained_selection"] == \
        EX[19, "tbx11k-train", "retained"]


def test_table20_deltas_and_the_text():
    for cohort in ("tbx11k-val", "shenzhen", "montgomery"):
        orig, new, delta = (EX[20, cohort, q] for q in ("original_retained", "retrained", "delta"))
        assert new - orig == pytest.approx(delta, abs=3 * HALF[4] + 1e-12)  # four-decimal values
        assert EX[20, cohort, "delta_low"] < delta < EX[20, cohort, "delta_high"]
        # Section 3.6 restates the deltas at fewer decimals
        assert round(delta, 4 if cohort == "tbx11k-val" else 3) == TEXT["retraining_delta", cohort]
    source = EX[20, "tbx11k-val", "retrained"]
    for cohort in ("shenzhen", "montgomery"):
        assert round(source - EX[20, cohort, "retrained"], 3) == TEXT["external_gap", cohort]
