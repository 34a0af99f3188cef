"""``medaudit audit`` end to end: outputs, byte-identical reruns, atomic failure, real data."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pandas as pd
import pytest
import yaml

from medaudit.cli.main import main

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
KWANG = ROOT.parent / "shared" / "data" / "tb_cross_cohort_predictions_kwang311"


def _small_spec(tmp_path: Path, **changes) -> Path:
    d = yaml.safe_load((EXAMPLES / "paper000_simulated.yaml").read_text())
    d.update({"simulate_scale": 0.05, "n_resamples": 100, "n_permutations": 99, **changes})
    p = tmp_path / "spec.yaml"
    p.write_text(yaml.safe_dump(d))
    return p


def _digest(d: Path) -> dict[str, str]:
    return {str(p.relative_to(d)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(d.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("audit")
    spec = _small_spec(tmp)
    outs = [tmp / "a", tmp / "b"]
    for o in outs:
        assert main(["audit", str(spec), "--out", str(o), "--quiet"]) == 0
    return outs


def test_outputs_exist(runs):
    out = runs[0]
    names = set(_digest(out))
    assert {"summary.md", "portability.csv", "portability.parquet", "results.json"} <= names
    for block in ("discrimination", "operating_points", "prompts", "spectrum", "prevalence",
                  "transport"):
        assert any(n.startswith(f"tables/{block}__") and n.endswith(".csv") for n in names), block
        assert any(n.startswith(f"tables/{block}__") and n.endswith(".parquet") for n in names)


def test_byte_identical_reruns(runs):
    assert _digest(runs[0]) == _digest(runs[1])


def test_every_row_carries_its_specification(runs):
    for csv in (runs[0] / "tables").glob("*.csv"):
        try:
            df = pd.read_csv(csv)
        except pd.errors.EmptyDataError:  # an empty table (e.g. no retained comparisons)
            continue
        if df.empty:
            continue
        for col in ("model", "prompt", "cohort", "negatives", "prevalence", "threshold",
                    "criterion", "design", "n_resamples", "seed", "family"):
            assert col in df.columns, (csv.name, col)


def test_results_json_provenance(runs):
    res = json.loads((runs[0] / "results.json").read_text())
    prov = res["provenance"]
    assert prov["seed"] == 2026 and prov["n_resamples"] == 100
    assert prov["inputs"]["simulated"] is True
    assert {"numpy", "scipy", "pandas", "statsmodels"} <= set(prov["versions"])
    assert prov["spec"]["primary_prompt"] == "clinical"
    assert prov["cohorts"]["tbx11k-val"]["negative_groups"]["healthy"] > 0
    assert set(res["blocks"]) == {"discrimination", "operating_points", "prompts", "spectrum",
                                  "prevalence", "transport", "retained"}


def test_parquet_equals_csv(runs):
    csv = pd.read_csv(runs[0] / "tables" / "discrimination__metrics.csv")
    pq = pd.read_parquet(runs[0] / "tables" / "discrimination__metrics.parquet")
    pd.testing.assert_series_equal(csv["estimate"], pq["estimate"])


def test_summary_is_led_by_portability_matrix(runs):
    text = (runs[0] / "summary.md").read_text()
    assert text.index("## Portability matrix") < text.index("## Provenance")
    assert "Simulated data" in text and "| claim |" in text


def test_failed_run_writes_nothing(tmp_path, capsys):
    spec = _small_spec(tmp_path, primary_prompt="clinicl")
    out = tmp_path / "out"
    assert main(["audit", str(spec), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "unknown prompt 'clinicl'" in err and "did you mean 'clinical'" in err
    assert not out.exists() and [p.name for p in tmp_path.iterdir()] == ["spec.yaml"]


def test_error_inside_a_block_leaves_no_partial_output(tmp_path, monkeypatch):
    from medaudit.blocks.transport import Transport

    def boom(self, ctx, config):
        raise RuntimeError("planted failure")

    monkeypatch.setattr(Transport, "run", boom)
    out = tmp_path / "out"
    with pytest.raises(RuntimeError, match="planted"):
        main(["audit", str(_small_spec(tmp_path)), "--out", str(out), "--quiet"])
    assert not out.exists()
    assert [p.name for p in tmp_path.iterdir()] == ["spec.yaml"]


@pytest.mark.skipif(not KWANG.exists(), reason=f"real data not found at {KWANG} (CI has it)")
def test_real_tb_predictions_example(tmp_path):
    d = yaml.safe_load((EXAMPLES / "kwang311_tb.yaml").read_text())
    d["n_resamples"] = 200
    for w in d["scores_wide"]:
        w["path"] = str((EXAMPLES / w["path"]).resolve())
    spec = tmp_path / "kwang.yaml"
    spec.write_text(yaml.safe_dump(d))
    out = tmp_path / "out"
    assert main(["audit", str(spec), "--out", str(out), "--quiet"]) == 0
    from sklearn.metrics import roc_auc_score

    m = pd.read_csv(out / "tables" / "discrimination__metrics.csv")
    raw = pd.read_csv(KWANG / "resnet50_full_test-Shenzhen.csv")
    ens = raw[[f"s{s}_Shenzhen" for s in range(42, 47)]].mean(axis=1)
    row = m[(m.cohort == "shenzhen") & (m.model == "resnet50-Shenzhen") & (m.criterion == "roc_auc")]
    assert row.estimate.iloc[0] == pytest.approx(roc_auc_score(raw.label, ens), rel=1e-12)
    seeds = pd.read_csv(out / "tables" / "retained__seeds.csv")
    assert len(seeds) > 0
    tr = pd.read_csv(out / "tables" / "transport__transport.csv")
    assert set(tr.cohort) == {"montgomery"} and set(tr.rule) == {"sensitivity", "specificity"}


def test_logit_scores_run_every_block(tmp_path):
    """score_scale: logits: rank metrics are reported, probability-only metrics left out."""
    import numpy as np

    from medaudit.simulate import simulate_paper000

    sim = pd.DataFrame(simulate_paper000(scale=0.05)["table"])
    sim["score"] = np.log(sim["score"] / (1 - sim["score"]))
    sim.to_csv(tmp_path / "logits.csv", index=False)
    d = yaml.safe_load((EXAMPLES / "paper000_simulated.yaml").read_text())
    d.pop("simulate")
    d.update({"scores": "logits.csv", "score_scale": "logits", "n_resamples": 50,
              "n_permutations": 19})
    spec = tmp_path / "spec.yaml"
    spec.write_text(yaml.safe_dump(d))
    out = tmp_path / "out"
    assert main(["audit", str(spec), "--out", str(out), "--quiet"]) == 0
    m = pd.read_csv(out / "tables" / "discrimination__metrics.csv")
    assert set(m.criterion) == {"roc_auc", "average_precision"}
    from sklearn.metrics import roc_auc_score

    g = sim[(sim.cohort == "shenzhen") & (sim.prompt == "clinical") & (sim.model == "sim-medsiglip")]
    row = m[(m.cohort == "shenzhen") & (m.model == "sim-medsiglip") & (m.criterion == "roc_auc")]
    assert row.estimate.iloc[0] == pytest.approx(roc_auc_score(g.label, g.score), rel=1e-12)
    res = json.loads((out / "results.json").read_text())
    assert any("logits" in n for n in res["blocks"]["prevalence"]["notes"])


def test_existing_out_fails_before_computing(tmp_path, capsys):
    out = tmp_path / "out"
    out.mkdir()
    spec = _small_spec(tmp_path)
    assert main(["audit", str(spec), "--out", str(out)]) == 2
    assert "--overwrite" in capsys.readouterr().err
    assert list(out.iterdir()) == []


def test_an_audit_in_which_no_block_can_run_is_refused(tmp_path, capsys):
    """Probe finding: `blocks: [spectrum]` on a table without negative groups wrote an empty
    report ("0 claims, 0 block tables") with exit 0.  When no block runs, the run says why
    each could not and writes nothing; one block that cannot run beside others is a note."""
    rows = [{"image_id": f"i{i}", "cohort": "c", "model": "m", "score": (i % 10) / 10,
             "label": int(i % 10 >= 4)} for i in range(40)]
    pd.DataFrame(rows).to_csv(tmp_path / "s.csv", index=False)
    spec = {"scores": "s.csv", "n_resamples": 20, "blocks": ["spectrum"]}
    (tmp_path / "spec.yaml").write_text(yaml.safe_dump(spec))
    assert main(["audit", str(tmp_path / "spec.yaml"), "--out", str(tmp_path / "out"),
                 "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "no block of this audit could run on its inputs (spectrum: no `spectrum:` entries" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.csv", "spec.yaml"]
    (tmp_path / "spec.yaml").write_text(yaml.safe_dump({**spec, "blocks": ["discrimination",
                                                                           "spectrum"]}))
    assert main(["audit", str(tmp_path / "spec.yaml"), "--out", str(tmp_path / "out"),
                 "--quiet"]) == 0
    assert "Did not run: no `spectrum:` entries" in (tmp_path / "out" / "summary.md").read_text()
