"""``medaudit score`` end to end: real images -> ScoreTable + ModelCard -> ``medaudit audit``.

Witnesses: the schema validator of the audit (``validate_score_table``), the audit itself
consuming the file, the scores of the library call on the same inputs, and the exit codes
and messages for bad input.
"""

from __future__ import annotations

import json

import pandas as pd
import pytest
import yaml

from medaudit.adapters import load_encoder, score_manifest
from medaudit.audit.spec import ModelCard
from medaudit.cli.main import main
from medaudit.io.schema import validate_score_table


def test_score_cli_then_audit(tmp_path, tiny_openclip_dir, real_manifest):
    manifest_path, manifest = real_manifest
    out = tmp_path / "scores.csv"
    rc = main(["score", str(manifest_path), "--model", "openclip", "--weights", str(tiny_openclip_dir),
               "--out", str(out), "--cache", str(tmp_path / "cache"), "--batch-size", "5",
               "--device", "cpu", "--quiet"])
    assert rc == 0 and out.exists() and not (tmp_path / "scores.csv.failures.csv").exists()
    assert not [p for p in tmp_path.iterdir() if ".tmp-" in p.name]  # atomic: no leftovers
    table = validate_score_table(pd.read_csv(out), source=str(out))
    assert len(table) == 5 * len(manifest)
    card = json.loads((tmp_path / "scores.csv.card.json").read_text())
    mc = ModelCard.model_validate(card["card"])
    assert mc.name == "openclip" and mc.learned_scale == pytest.approx(20.0, rel=1e-6)
    assert card["n_encoded"] == len(manifest) and card["n_failed"] == 0
    # the file holds exactly what the library call computes (CSV written at full precision)
    enc = load_encoder("openclip", weights=tiny_openclip_dir, device="cpu")
    direct = score_manifest(manifest, enc, batch_size=5)
    pd.testing.assert_series_equal(table["score"], direct.scores["score"], check_exact=True)
    assert card["batch_size"] == 5 and card["device"] == "cpu"
    # another batch shape may round float32 kernels differently, never by more than ~1e-6
    other = score_manifest(manifest, enc, batch_size=32)
    pd.testing.assert_series_equal(table["score"], other.scores["score"], rtol=1e-5)

    # a second run reuses every cached embedding and writes byte-identical output
    out2 = tmp_path / "again.csv"
    assert main(["score", str(manifest_path), "--model", "openclip", "--weights",
                 str(tiny_openclip_dir), "--out", str(out2), "--cache", str(tmp_path / "cache"),
                 "--device", "cpu", "--quiet"]) == 0
    assert out2.read_bytes() == out.read_bytes()
    assert json.loads((tmp_path / "again.csv.card.json").read_text())["n_encoded"] == 0

    from medaudit.audit.run import audit
    from medaudit.audit.spec import load_spec

    spec = {"name": "tiny-openclip-real-images", "scores": str(out), "primary_prompt": "clinical",
            "n_resamples": 20, "n_permutations": 19, "seed": 7,
            "models": [card["card"]],
            "cohorts": {"nih": {"role": "primary"}, "kermany": {"role": "primary"}},
            "blocks": ["discrimination", "prompts"]}
    (tmp_path / "spec.yaml").write_text(yaml.safe_dump(spec))
    outcome = audit(*load_spec(tmp_path / "spec.yaml"))
    assert set(outcome.results) == {"discrimination", "prompts"}
    tables = outcome.results["discrimination"].tables
    assert any(len(df) for df in tables.values())


def test_score_cli_bad_input(tmp_path, tiny_openclip_dir, real_manifest, capsys):
    _, manifest = real_manifest
    m = pd.concat([manifest.iloc[:3], pd.DataFrame([{"image_id": "lost", "path": "nowhere.png",
                                                     "cohort": "nih", "label": 0}])])
    m.to_csv(tmp_path / "m.csv", index=False)
    out = tmp_path / "s.parquet"
    rc = main(["score", str(tmp_path / "m.csv"), "--model", "openclip", "--weights",
               str(tiny_openclip_dir), "--out", str(out), "--device", "cpu", "--quiet"])
    assert rc == 1  # partial: the readable images are scored, the failure listed
    assert sorted(pd.read_parquet(out)["image_id"].unique()) == sorted(manifest["image_id"][:3])
    fails = pd.read_csv(tmp_path / "s.parquet.failures.csv")
    assert fails["image_id"].tolist() == ["lost"] and "nowhere.png" in capsys.readouterr().err
    # an existing output is not overwritten without --overwrite
    assert main(["score", str(tmp_path / "m.csv"), "--model", "openclip", "--out", str(out)]) == 2
    # an unknown model lists the registry
    assert main(["score", str(tmp_path / "m.csv"), "--model", "clip", "--out", str(tmp_path / "x.csv")]) == 2
    err = capsys.readouterr().err
    assert "unknown model 'clip'" in err and "medsiglip" in err and "chexficient" in err
    # a manifest without a label column names what is missing
    m.drop(columns=["label"]).to_csv(tmp_path / "nolabel.csv", index=False)
    assert main(["score", str(tmp_path / "nolabel.csv"), "--model", "openclip", "--weights",
                 str(tiny_openclip_dir), "--out", str(tmp_path / "y.csv")]) == 2
    assert "missing column(s) ['label']" in capsys.readouterr().err


def test_hub_download_failure_says_to_pass_local_weights(monkeypatch):
    """No network here: the pinned hub fetch fails; the error names the checkpoint and --weights."""
    from medaudit.adapters import registry
    from medaudit.exceptions import MedauditError

    def offline(entry, weights):
        raise RuntimeError("Failed to download weights for tag 'laion2b_s34b_b79k'")

    monkeypatch.setattr(registry, "_load_open_clip", offline)
    with pytest.raises(MedauditError, match=r"could not fetch .*--weights"):
        registry.load_encoder("openclip")
