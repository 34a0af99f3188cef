"""The paper-000 fixtures are the paper's numbers: each CSV against the seed text it quotes.

For every table the numbers of the CSV, in row order, must be the numbers of that table's block in
``../shared/seeds/000_*.txt``, in reading order; where the extraction scrambled a row the CSV
records the reconstructed order and the test applies the same, named move.  Sentence quotes in
``source`` must occur in the text.  Skipped where the seeds are absent.
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest

from tests.published import REFERENCE, load, missing_quotes, seed_numbers, seed_text


def _same(seed: list[float], fixture) -> None:
    fixture = [float(v) for v in fixture if not (isinstance(v, float) and np.isnan(v))]
    assert len(seed) == len(fixture)
    np.testing.assert_array_equal(seed, fixture)


def test_table4_table12_table5_table7_table9_table11():
    t4 = load("paper000_table4_clinical.csv")
    cols = ["auroc", "auroc_low", "auroc_high", "auprc", "brier", "ece15", "aurc"]
    moved = cols[3:] + cols[:3]  # VinDr-CXR/OpenCLIP: the AUROC cell is printed last
    vals = [getattr(r, c) for r in t4.itertuples()
            for c in (moved if (r.cohort, r.model) == ("vindr", "OpenCLIP") else cols)]
    _same(seed_numbers("000", "Table 4: Primary clinical-prompt", "Lower Brier, ECE"), vals)
    _same(seed_numbers("000", "Table 12: Brier scores standardized", "The final three columns"),
          load("paper000_table12_brier_pi.csv")["bs_pi"])
    _same(seed_numbers("000", "Table 5: Within-cohort operating", "Se: sensitivity"),
          load("paper000_table5_operating_points.csv").iloc[:, 2:6].to_numpy().ravel())
    _same(seed_numbers("000", "Table 7: Equal-weight averaging", "Positive AUROC differences"),
          load("paper000_table7_prompt_average.csv").iloc[:, 2:8].to_numpy().ravel())
    _same(seed_numbers("000", "Table 9: Paired negative-spectrum", "Each contrast uses"),
          load("paper000_table9_negative_spectrum.csv").iloc[:, 1:7].to_numpy().ravel())
    v = load("paper000_table10_table11_vindr.csv")
    _same(seed_numbers("000", "Table 11: Paired VinDr-CXR", "Values are differences"),
          v[v.table == 11][["value", "low", "high"]].to_numpy().ravel())
    t10 = v[v.table == 10][["value", "low", "high"]].to_numpy()
    t10[[9, 10, 11]] = t10[[11, 10, 9]]  # OpenCLIP: printed tumor, pneumonia, no finding
    _same(seed_numbers("000", "Table 10: VinDr-CXR AUROC by named", "All three contrasts"), t10.ravel())


def test_table6_and_figure2():
    primary = pd.read_csv(REFERENCE / "paper000_table6_auroc.csv", comment="#")
    t6 = pd.concat([primary, load("paper000_table6_auroc_extension.csv")], ignore_index=True)
    order = {c: i for i, c in enumerate(["montgomery", "shenzhen", "tbx11k-val", "vindr", "tbx11k-train"])}
    models = {m: i for i, m in enumerate(["CheXficient", "MedSigLIP", "BioMedCLIP", "OpenCLIP"])}
    prompts = {p: i for i, p in enumerate(["clinical", "photo", "report", "presence", "normal"])}
    key = t6.cohort.map(order) * 100 + t6.model.map(models) * 10 + t6.prompt.map(prompts)
    t6 = t6.assign(k=key).sort_values("k")
    _same(seed_numbers("000", "Table 6: Complete AUROC matrix", "Clinical is the primary"), t6["auroc"])
    # Figure 2: the cell values with their stars; the extraction moves panel (a)'s first cell
    # (CheXficient, Photo, +0.009) behind the panel's axis label
    text = seed_text("000").replace("−", "-").replace("∗", "*")
    block = text[text.index("Risk is the error fraction"):text.index("Figure 2: AUROC changes")]
    cells = re.findall(r"[+-]?\d\.\d{3}\*?", block)
    cells.insert(0, cells.pop(cells.index("+0.009")))
    f2 = load("paper000_figure2_delta_auroc.csv")
    assert [float(c.rstrip("*")) for c in cells] == f2["delta_auroc"].tolist()
    assert [c.endswith("*") for c in cells] == (f2["bh_star"] == 1).tolist()


def test_tables14_to_20():
    t = load("paper000_tables14_17_transport.csv")
    t14 = t[t.table == 14][["threshold", "se", "sp"]].to_numpy().ravel()
    _same(seed_numbers("000", "Table 14: Operating thresholds", "Figure 6")[:24], t14)
    t15 = t[t.table == 15][["se", "se_low", "se_high", "sp", "sp_low", "sp_high"]].to_numpy()
    t15[-1] = np.r_[t15[-1, 3:], t15[-1, :3]]  # VinDr-CXR/OpenCLIP: specificity printed first
    _same(seed_numbers("000", "Table 15: Transport of the TBX11K", "Retains refers"), t15.ravel())
    assert t[t.table == 15].retains.tolist() == re.findall(
        r"\b(Yes|No)\b", seed_text("000").split("Table 15: Transport", 1)[1].split("Retains refers", 1)[0])
    _same(seed_numbers("000", "Table 16: Sensitivity-threshold", "Thresholds target"),
          t[t.table == 16][["threshold", "se", "se_low", "se_high", "sp"]].to_numpy().ravel())
    _same(seed_numbers("000", "Table 17: Secondary transport", "The threshold remains"),
          t[t.table == 17][["se", "sp"]].to_numpy().ravel())
    ex = load("paper000_tables19_20_exclusion.csv")
    _same(seed_numbers("000", "Table 20: Retraining after", "The paired interval")[:15],
          ex[ex.table == 20].value)
    text = seed_text("000")
    block = text[text.index("Table 19: Conservative removal"):text.index("The screen produces")]
    counts = [int(x) for x in re.findall(r"(?<![\w.])\d+(?![\w.])", block.split("Non-TB retained", 1)[1])]
    assert counts == ex[(ex.table == 19) & (ex.cohort != "all")
                                                  & ~ex.quantity.str.startswith("retained_")].value.tolist()


def test_table1():
    text = seed_text("000")
    block = text[text.index("Table 1: Cohort composition"):text.index("Counts describe image records")]
    printed = [float(x.replace(",", "")) for x in re.findall(r"\d[\d,]*(?:\.\d)?", block.split("Role", 1)[1])
               if x not in ("11", "1")]  # the "11" of "TBX11K"
    c = load("paper000_table1_cohorts.csv").set_index(["cohort", "quantity"])["value"]
    want = []
    for cohort in ("montgomery", "shenzhen", "tbx11k-val", "tbx11k-train", "vindr"):
        lead = [c[cohort, "n_healthy"], c[cohort, "n_sick"]] if (cohort, "n_healthy") in c else []
        want += lead + [c[cohort, q] for q in ("n_tb", "n_non_tb", "tb_percent")]
    assert printed == want


@pytest.mark.parametrize("name", ["paper000_text.csv", "paper000_table1_cohorts.csv",
                                  "paper000_tables19_20_exclusion.csv"])
def test_quoted_sentences_are_in_the_text(name):
    assert missing_quotes(load(name), "000") == []
