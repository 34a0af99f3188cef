"""The command line end to end: outputs, determinism, atomic failure, clear errors."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from medaudit.cli.main import main
from medaudit.io import atomic_directory
from medaudit.simulate import simulate_cohort

SHARED = Path(__file__).resolve().parents[2].parent / "shared" / "data"
KWANG = SHARED / "tb_cross_cohort_predictions_kwang311"

FAST = ["--n-resamples", "200", "--n-permutations", "199", "--quiet"]


def _files(d: Path) -> dict[str, bytes]:
    return {str(p.relative_to(d)): p.read_bytes() for p in sorted(d.rglob("*")) if p.is_file()}


DEMO = ["--scale", "0.03", "--n-resamples", "30", "--n-permutations", "19", "--quiet"]


@pytest.fixture(scope="module")
def demo_out(tmp_path_factory) -> Path:
    """One small demo run, read by the tests below (a second run checks the bytes)."""
    out = tmp_path_factory.mktemp("demo") / "a"
    assert main(["demo", "--out", str(out), *DEMO]) == 0
    return out


@pytest.mark.slow
def test_demo_is_the_audit_of_the_embedded_spec_and_byte_identical(demo_out, tmp_path):
    a, b = demo_out, tmp_path / "b"
    assert main(["demo", "--out", str(b), *DEMO]) == 0
    fa, fb = _files(a), _files(b)
    assert {"report.html", "results.json", "summary.md", "portability.csv",
            ".medaudit-output"} <= set(fa)  # .medaudit-output: the output-folder marker
    assert "tables/discrimination__metrics.csv" in fa and any(k.startswith("figures/") for k in fa)
    assert fa == fb
    res = json.loads(fa["results.json"])
    assert res["provenance"]["inputs"]["simulated"] is True
    assert res["provenance"]["n_resamples"] == 30
    assert res["provenance"]["spec"]["simulate_scale"] == 0.03
    metrics = pd.read_csv(a / "tables" / "discrimination__metrics.csv")
    # every row carries its specification and resampling provenance
    for col in ("model", "prompt", "cohort", "negatives", "prevalence", "threshold", "criterion",
                "design", "n_resamples", "seed", "n_degenerate"):
        assert col in metrics.columns


def test_demo_auroc_matches_direct_computation(demo_out):
    from sklearn.metrics import roc_auc_score

    from medaudit.simulate import simulate_paper000

    metrics = pd.read_csv(demo_out / "tables" / "discrimination__metrics.csv")
    t = pd.DataFrame(simulate_paper000(rng=2026, scale=0.03)["table"])
    t = t[t.prompt == "clinical"]
    for (cohort, model), g in t.groupby(["cohort", "model"]):
        row = metrics[(metrics.model == model) & (metrics.cohort == cohort)
                      & (metrics.criterion == "roc_auc")].iloc[0]
        # CSV keeps full precision (%.17g); witness: scikit-learn on the simulated table
        assert row.estimate == pytest.approx(roc_auc_score(g.label, g.score), rel=1e-12)


def test_existing_output_needs_overwrite(tmp_path, capsys):
    out = tmp_path / "o"
    out.mkdir()
    assert main(["demo", "--out", str(out), *DEMO]) == 2
    assert "--overwrite" in capsys.readouterr().err


def test_failed_run_leaves_nothing(tmp_path):
    target = tmp_path / "out"
    with pytest.raises(RuntimeError), atomic_directory(target) as tmp:
        (tmp / "half.csv").write_text("x")
        raise RuntimeError("boom")
    assert not target.exists()
    assert list(tmp_path.iterdir()) == []


def _table():
    return pd.DataFrame(simulate_cohort(n_pos=20, n_healthy=15, n_sick=15, rng=1))


@pytest.mark.parametrize(
    "mutate, message",
    [
        (lambda t: t.drop(columns=["label"]), "missing column"),
        (lambda t: pd.concat([t, t.iloc[:1]]), "repeat a .* key"),
        (lambda t: t.assign(label=t.label.replace({0: 2})), "'label' must be 0 or 1"),
        (lambda t: t.assign(score=t.score.where(t.index != 3, np.nan)),
         "scores.csv.*line 5 is not"),  # data row 4 is line 5 of the file
        (lambda t: t.assign(negative_group=np.where(t.label == 1, "healthy", t.negative_group)),
         "must be empty for positives"),
        (lambda t: t[~((t.model == "sim-clip-b") & (t.image_id == "img00004"))],
         "identical image sets.*img00004"),
    ],
    ids=["missing-column", "duplicate-key", "label-2", "nan-score", "positive-in-group",
         "mismatched-images"],
)
def test_bad_tables_raise_clear_errors(mutate, message, tmp_path, capsys):
    src = tmp_path / "scores.csv"
    mutate(_table()).reset_index(drop=True).to_csv(src, index=False)
    out = tmp_path / "o"
    assert main(["summarize", str(src), "--out", str(out), *FAST]) == 2
    assert re.search(message, capsys.readouterr().err, re.S)
    assert not out.exists()


def test_summarize_cli_reports_bad_input_and_writes_nothing(tmp_path, capsys):
    src = tmp_path / "scores.csv"
    _table().drop(columns=["score"]).to_csv(src, index=False)
    out = tmp_path / "o"
    assert main(["summarize", str(src), "--out", str(out), *FAST]) == 2
    assert "missing column" in capsys.readouterr().err
    assert not out.exists()


def test_summarize_missing_file(tmp_path, capsys):
    assert main(["summarize", str(tmp_path / "nope.csv"), "--out", str(tmp_path / "o")]) == 2
    assert "does not exist" in capsys.readouterr().err


def _kwang_long() -> pd.DataFrame:
    frames = []
    for cohort in ("Montgomery", "Shenzhen"):
        wide = pd.read_csv(KWANG / f"resnet50_full_test-{cohort}.csv")
        long = wide.melt(id_vars=["stem", "label"], var_name="run", value_name="score")
        long["model"] = "resnet50-" + long["run"].str.split("_").str[1]
        long["seed"] = long["run"].str.split("_").str[0].str[1:].astype(int)
        long["prompt"] = "seed" + long["seed"].astype(str)
        long["cohort"] = cohort
        frames.append(long.rename(columns={"stem": "image_id"}).drop(columns="run"))
    return pd.concat(frames, ignore_index=True)


@pytest.mark.skipif(not KWANG.exists(), reason=f"real data not found at {KWANG} "
                    "(CI always has ../shared/data)")
def test_real_tb_predictions_end_to_end(tmp_path):
    long = _kwang_long()
    src = tmp_path / "kwang.parquet"
    long.to_parquet(src)
    out = tmp_path / "o"
    assert main(["summarize", str(src), "--out", str(out), *FAST]) == 0
    auc = pd.read_csv(out / "tables" / "prompts__auroc_matrix.csv")
    auc = auc[auc.criterion == "roc_auc"]
    assert len(auc) == 2 * 4 * 5  # cohorts x training sources x seeds (one "prompt" each)
    # independent witness: scikit-learn on the raw file
    from sklearn.metrics import roc_auc_score

    raw = pd.read_csv(KWANG / "resnet50_full_test-Shenzhen.csv")
    row = auc[(auc.cohort == "Shenzhen") & (auc.model == "resnet50-TBX11K")
              & (auc.prompt == "seed42")].iloc[0]
    assert row.estimate == pytest.approx(roc_auc_score(raw.label, raw.s42_TBX11K), rel=1e-12)
    metrics = pd.read_csv(out / "tables" / "discrimination__metrics.csv")
    assert set(metrics.prompt) == {"seed42"}  # the primary prompt: first in sorted order
    assert (metrics.n_degenerate[metrics.cohort == "Shenzhen"] == 0).all()
    res = json.loads((out / "results.json").read_text())
    assert len(res["provenance"]["inputs"]["sha256"]) == 64


def test_summary_cells_do_not_depend_on_other_cohorts(tmp_path):
    one = pd.DataFrame(simulate_cohort(n_pos=15, n_healthy=10, n_sick=10, cohort="C", rng=3))
    other = pd.DataFrame(simulate_cohort(n_pos=12, n_healthy=9, n_sick=9, cohort="A", rng=4))
    tables = {}
    for name, t in (("alone", one), ("both", pd.concat([other, one], ignore_index=True))):
        t.to_csv(tmp_path / f"{name}.csv", index=False)
        assert main(["summarize", str(tmp_path / f"{name}.csv"), "--out", str(tmp_path / name),
                     "--n-resamples", "50", "--n-permutations", "19", "--quiet"]) == 0
        tables[name] = tmp_path / name / "tables"
    for stem in ("discrimination__metrics", "discrimination__model_differences",
                 "spectrum__groups"):
        a = pd.read_csv(tables["alone"] / f"{stem}.csv")
        b = pd.read_csv(tables["both"] / f"{stem}.csv")
        b = b[b.cohort == "C"].reset_index(drop=True)
        cols = [c for c in a.columns if c != "entry"]  # the spectrum entry's index in the spec
        pd.testing.assert_frame_equal(a[cols], b[cols])


def test_audit_progress_lines_when_not_a_terminal(tmp_path, capsys):
    import yaml

    root = Path(__file__).resolve().parents[2]
    d = yaml.safe_load((root / "examples" / "paper000_simulated.yaml").read_text())
    d.update({"simulate_scale": 0.03, "n_resamples": 30, "n_permutations": 19,
              "blocks": ["discrimination", "transport"]})
    spec = tmp_path / "s.yaml"
    spec.write_text(yaml.safe_dump(d))
    assert main(["audit", str(spec), "--out", str(tmp_path / "o"), "--verbose"]) == 0
    cap = capsys.readouterr()
    assert "[1/3] discrimination" in cap.err and "[2/3] transport" in cap.err
    assert "discrimination: bootstrap montgomery" in cap.err  # per-step lines with --verbose
    assert "report.html" in cap.out and "figures/" in cap.out
    assert "bootstrap: 30 replicates drawn" in cap.err  # per-resampling lines from the engine
    assert "permutation: 19 replicates drawn" not in cap.err  # transport has no permutations
    assert main(["audit", str(spec), "--out", str(tmp_path / "q"), "--quiet"]) == 0
    cap = capsys.readouterr()
    assert cap.out == "" and "medaudit: [" not in cap.err
