"""``medaudit plan AUDIT_DIR``: cases to resolve each unresolved claim, end to end.

Witnesses: the audit's own files (portability.csv says which cells are unresolved; the
source tables give their positives and negatives) and the resolution rule written out here
(the half-width facing the claimed value shrinks as 1/sqrt(n) at the observed effect, by the
factor ((h / |estimate - v|) (z + z_power) / z)^2).  An audit spec asking for every new table
also checks that they reach the tables, results.json, the report and its figures.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd
import pytest
from scipy import stats

from medaudit.cli.main import main

SPEC = """\
name: plan-e2e
simulate: paper000
simulate_scale: 0.03
primary_prompt: clinical
seed: 2026
n_resamples: 40
n_permutations: 19
cohorts:
  montgomery: {role: primary}
  shenzhen: {role: primary}
  tbx11k-train: {role: source}
  vindr: {role: extension, design: within_label}
operating_points:
  thresholds: [0.5]
  rules: [youden]
  partial_auc: [{specificity: [0.9, 1]}]
  curves: {grid: 11}
  calibration: true
transport:
  - source: tbx11k-train
    targets: [shenzhen, montgomery]
    rules: [sensitivity, youden]
    threshold_metrics: true
planning:
  cohorts: [shenzhen]
  auroc: [{at_least: 0.6}]
  se_sp: [{min_sensitivity: 0.6, min_specificity: 0.6, rule: youden}]
  paired_auroc: true
"""


@pytest.fixture(scope="module")
def audit_dir(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("plan")
    (d / "spec.yaml").write_text(SPEC, encoding="utf-8")
    assert main(["audit", str(d / "spec.yaml"), "--out", str(d / "out"), "--quiet"]) == 0
    return d / "out"


@pytest.mark.slow
def test_the_new_tables_and_figures_reach_every_output(audit_dir):
    tables = {p.name for p in (audit_dir / "tables").glob("*.csv")}
    for name in ("operating_points__threshold_metrics", "operating_points__cutpoints",
                 "operating_points__partial_auc", "operating_points__partial_auc_differences",
                 "operating_points__roc_curve", "operating_points__roc_band",
                 "operating_points__pr_band",
                 "operating_points__pr_curve", "operating_points__calibration",
                 "operating_points__calibration_curve", "transport__threshold_metrics",
                 "planning__auroc", "planning__se_sp", "planning__paired_auroc"):
        assert f"{name}.csv" in tables, name
    figs = {p.name for p in (audit_dir / "figures").glob("*.png")}
    assert {"fig13_roc_curves.png", "fig14_pr_curves.png",
            "fig15_calibration_curves.png"} <= figs
    html = (audit_dir / "report.html").read_text(encoding="utf-8")
    assert 'id="block-planning"' in html and "Figure 13. ROC curves" in html
    data = json.loads((audit_dir / "results.json").read_text())
    assert "planning" in data["provenance"]["spec"]["blocks"]
    # medaudit report re-renders the page byte for byte from results.json
    assert main(["report", str(audit_dir), "--out", str(audit_dir.parent / "again.html"),
                 "--quiet"]) == 0
    assert (audit_dir.parent / "again.html").read_bytes() == (audit_dir / "report.html").read_bytes()


def test_plan_end_to_end_against_the_rule_by_hand(audit_dir, tmp_path):
    out = tmp_path / "plan.csv"
    assert main(["plan", str(audit_dir), "--out", str(out), "--quiet"]) == 0
    plan = pd.read_csv(out)
    port = pd.read_csv(audit_dir / "portability.csv")
    unresolved = port[port["verdict"] == "unresolved"]
    assert len(plan) == len(unresolved) > 0
    assert list(plan["claim_id"]) == list(unresolved["claim_id"])
    z = stats.norm.isf(0.025)
    zb = stats.norm.ppf(0.8)
    checked = 0
    for _, r in plan.iterrows():
        if r["status"] != "unresolved":
            # "interval not trusted": a generated claim whose interval left replicates out is
            # unresolved since the degenerate-replicate rule reached generated claims too
            assert r["status"] in ("never", "no interval", "holds", "does not hold",
                                   "interval not trusted")
            continue
        est, lo, hi, v = r["estimate"], r["ci_low"], r["ci_high"], r["claim_value"]
        side_up = (est > v)
        half = (est - lo) if side_up else (hi - est)
        f = (half / abs(est - v)) ** 2 * ((z + zb) / z) ** 2
        assert r["factor"] == pytest.approx(f, rel=1e-12)
        assert r["additional_pos"] == max(math.ceil(f * r["n_pos"] - 1e-9) - r["n_pos"], 0)
        assert r["additional_neg"] == max(math.ceil(f * r["n_neg"] - 1e-9) - r["n_neg"], 0)
        checked += 1
    assert checked > 5
    # the counts are those of the cell's cohort (all models share the cohort's images)
    counts = pd.read_csv(audit_dir / "tables" / "discrimination__metrics.csv")
    cells = plan[(plan["status"] == "unresolved")
                 & plan["change"].isin(["at E", "cohort", "prompt", "criterion"])]
    assert len(cells) > 5
    for _, r in cells.iterrows():
        c = counts[counts["cohort"] == r["cohort"]].iloc[0]
        assert (r["n_pos"], r["n_neg"]) == (c["n_pos"], c["n_neg"])


def test_plan_is_deterministic_and_prints_markdown(audit_dir, tmp_path, capsys):
    a, b = tmp_path / "a.csv", tmp_path / "b.csv"
    assert main(["plan", str(audit_dir), "--out", str(a), "--quiet"]) == 0
    assert main(["plan", str(audit_dir), "--out", str(b), "--quiet"]) == 0
    assert a.read_bytes() == b.read_bytes()
    capsys.readouterr()
    assert main(["plan", str(audit_dir), "--power", "0.5"]) == 0
    md = capsys.readouterr().out
    assert md.startswith("# Cases to resolve the unresolved claims")
    assert "| claim_id | claim |" in md and "expected interval just excludes" not in md
    assert main(["plan", str(audit_dir), "--out", str(tmp_path / "p.md"), "--quiet"]) == 0
    assert (tmp_path / "p.md").read_text().startswith("# Cases to resolve")


@pytest.mark.parametrize("make, message", [
    (lambda d: d, "is not a medaudit audit (no results.json)"),
    (lambda d: (d / "results.json").write_text("{not json") and d, "not valid JSON"),
    (lambda d: (d / "results.json").write_text('{"provenance": {}, "blocks": {}}') and d,
     "not the results of `medaudit audit`"),
    (lambda d: (d / "results.json").write_text(
        '{"provenance": {"spec": {"name": 3}}, "blocks": {}, "portability": []}') and d,
     "(its provenance.spec): name: Input should be a valid string"),
])
def test_a_folder_that_is_not_an_audit_gives_one_line(tmp_path, capsys, make, message):
    d = tmp_path / "x"
    d.mkdir()
    make(d)
    assert main(["plan", str(d)]) == 2
    cap = capsys.readouterr()
    assert cap.out == ""
    lines = cap.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("medaudit: error: ") and message in lines[0]


def test_bad_options_give_one_line(audit_dir, tmp_path, capsys):
    assert main(["plan", str(audit_dir), "--out", str(tmp_path / "plan.txt")]) == 2
    assert "give a .csv or a .md file name" in capsys.readouterr().err
    assert main(["plan", str(audit_dir), "--power", "1.5"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--power must lie strictly between 0 and 1" in err[0]
    assert main(["plan", str(tmp_path / "missing")]) == 2
    assert "no results.json" in capsys.readouterr().err


@pytest.mark.parametrize("power", ["0.3", "1e-9"])
def test_power_below_even_odds_is_refused(audit_dir, tmp_path, capsys, power):
    # probe finding: below 0.5 the factor ((z + z_power) / z)^2 grows again as the power falls
    # (--power 1e-9 asked for more cases than 0.5); such a plan is refused, nothing written
    out = tmp_path / "plan.csv"
    assert main(["plan", str(audit_dir), "--power", power, "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"--power = {float(power):g} is below 0.5" in err[0]
    assert "give a power in [0.5, 1)" in err[0]
    assert not out.exists()


def test_markdown_prints_case_counts_as_counts(audit_dir, capsys):
    # probe finding: additional_pos / additional_neg printed as "226.000"
    assert main(["plan", str(audit_dir)]) == 0
    md = capsys.readouterr().out
    rows = [line.split(" | ") for line in md.splitlines() if line.startswith("| ")]
    head, body = rows[0], rows[2:] if rows[1][0].startswith("|---") else rows[1:]
    assert body, md
    for col in ("additional_pos", "additional_neg"):
        i = head.index(col)
        cells = [r[i].strip(" |") for r in body]
        assert all(c == "—" or c.isdigit() for c in cells), (col, cells)
