"""``medaudit score`` end to end: real images -> ScoreTable + ModelCard -> ``medaudit audit``.

Witnesses: the schema validator of the audit (``validate_score_table``), the audit itself
consuming the file, the scores of the library call on the same inputs, and the exit codes
and messages for bad input.
"""

from __future__ import annotations

import dataclasses
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
    monkeypatch.setattr(registry, "_hub_reachable", lambda: True)  # no TCP probe in a test
    with pytest.raises(MedauditError, match=r"could not fetch .*RuntimeError; no network.*--weights"):
        registry.load_encoder("openclip")


def test_nothing_of_the_checkpoint_in_the_cache_offline_is_refused_before_torch(tmp_path):
    """Offline (HF_HUB_OFFLINE=1, an empty Hugging Face cache) a hub checkpoint cannot load:
    the refusal comes before torch and the model library are imported (seconds of a
    command that cannot succeed).  Witness: the modules of the process that refused."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    code = ("import sys\n"
            "from medaudit.adapters.registry import load_encoder\n"
            "from medaudit.exceptions import MedauditError\n"
            "for name in ('biomedclip', 'medsiglip'):\n"
            "    try:\n"
            "        load_encoder(name)\n"
            "    except MedauditError as e:\n"
            "        print(e)\n"
            "print(sorted(m for m in ('torch', 'open_clip', 'transformers') if m in sys.modules))\n")
    src = str(Path(__file__).resolve().parents[2] / "src")
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_HOME": str(tmp_path / "hf"),
           "PYTHONPATH": src + os.pathsep + os.environ.get("PYTHONPATH", "")}
    for k in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "TRANSFORMERS_CACHE",
              "PYTORCH_TRANSFORMERS_CACHE", "PYTORCH_PRETRAINED_BERT_CACHE"):
        env.pop(k, None)
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                         timeout=120, check=True)
    lines = res.stdout.strip().splitlines()
    assert len(lines) == 3, res.stdout + res.stderr
    for line, ckpt in zip(lines[:2], ("hf-hub:microsoft/BiomedCLIP", "google/medsiglip-448"),
                          strict=True):
        assert line.startswith(f"could not fetch '{ckpt}"), line
        assert ("(the hub client is set offline (HF_HUB_OFFLINE) and no copy is in the local "
                "Hugging Face cache); download it") in line and "--weights" in line
    assert lines[2] == "[]"  # neither torch nor a model library was imported


def test_a_copy_in_the_cache_is_left_to_the_loader(monkeypatch, tmp_path):
    """Where the cache holds the checkpoint's repository, the loader runs (offline, it reads
    the copy); where it holds nothing, the refusal comes first, naming the cause."""
    import socket

    from huggingface_hub import constants
    from huggingface_hub.file_download import repo_folder_name

    from medaudit.adapters import registry
    from medaudit.exceptions import MedauditError

    calls = []

    def loader(entry, weights):
        calls.append(entry.name)
        return "model", "pre", "tok", "rev", "ckpt"

    def refuse(address, timeout=None):
        raise OSError("unreachable")

    for k in ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy",
              "HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_ENDPOINT", "TRANSFORMERS_CACHE",
              "PYTORCH_TRANSFORMERS_CACHE", "PYTORCH_PRETRAINED_BERT_CACHE"):
        monkeypatch.delenv(k, raising=False)
    monkeypatch.setattr(socket, "create_connection", refuse)  # the hub is not reachable
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path))
    monkeypatch.setattr(registry, "_load_open_clip", loader)
    monkeypatch.setattr(registry, "_load_transformers", loader)
    monkeypatch.setattr(registry, "ImageTextEncoder", lambda entry, **kw: kw)
    for name in ("biomedclip", "medsiglip"):
        with pytest.raises(MedauditError, match=r"its hub is not reachable from this machine and "
                                                r"no copy is in the local Hugging Face cache"):
            registry.load_encoder(name, device="cpu")
    assert calls == []
    for name, repo in (("biomedclip", "microsoft/BiomedCLIP-PubMedBERT_256-vit_base_patch16_224"),
                       ("medsiglip", "google/medsiglip-448")):
        (tmp_path / repo_folder_name(repo_id=repo, repo_type="model")).mkdir()
        assert registry.load_encoder(name, device="cpu")["model"] == "model"
    assert calls == ["biomedclip", "medsiglip"]
    # a transformers 4 cache variable may hold the copy elsewhere: the loader decides
    monkeypatch.setenv("TRANSFORMERS_CACHE", str(tmp_path / "elsewhere"))
    registry.load_encoder("chexficient", device="cpu")
    assert calls[-1] == "chexficient"
    monkeypatch.delenv("TRANSFORMERS_CACHE")
    # a checkpoint that is a local folder (transformers reads it before any hub), or that is
    # no repository id at all, is the loader's to judge too
    local = tmp_path / "my-model"
    local.mkdir()
    medsiglip = registry.get_entry("medsiglip")
    for ckpt in (str(local), "not//a repo id"):
        entry = dataclasses.replace(medsiglip, name=f"mine-{len(calls)}", checkpoint=ckpt)
        registry.load_encoder(entry, device="cpu")
        assert calls[-1] == entry.name
    n = len(calls)
    # told offline by TRANSFORMERS_OFFLINE (as huggingface_hub reads it): no probe, and with
    # nothing in the cache the refusal says so
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "1")
    with pytest.raises(MedauditError, match=r"the hub client is set offline \(TRANSFORMERS_OFFLINE\)"):
        registry.load_encoder("chexficient", device="cpu")
    assert len(calls) == n


def _score(manifest, out, weights, *extra):
    return main(["score", str(manifest), "--model", "openclip", "--weights", str(weights),
                 "--out", str(out), "--device", "cpu", "--quiet", *extra])


def test_a_16_bit_png_scores_as_its_8_bit_original(tmp_path, tiny_openclip_dir, real_manifest):
    """A 16-bit copy (v = 257 x) of a real 8-bit X-ray is that image again
    (medaudit.imaging.pixels), not an almost white one clipped at 255 by Pillow."""
    import numpy as np
    from PIL import Image

    _, manifest = real_manifest
    src = manifest.iloc[0]
    a = np.asarray(Image.open(src["path"]).convert("L"))
    Image.fromarray(a.astype(np.uint16) * 257).save(tmp_path / "wide.png")
    Image.fromarray(a).save(tmp_path / "narrow.png")
    pd.DataFrame({"image_id": ["wide", "narrow"], "path": ["wide.png", "narrow.png"],
                  "cohort": "c", "label": [1, 0]}).to_csv(tmp_path / "m.csv", index=False)
    assert _score(tmp_path / "m.csv", tmp_path / "s.csv", tiny_openclip_dir) == 0
    s = pd.read_csv(tmp_path / "s.csv").pivot(index="prompt", columns="image_id", values="score")
    np.testing.assert_array_equal(s["wide"].to_numpy(), s["narrow"].to_numpy())


def test_score_replaces_only_files_it_wrote(tmp_path, tiny_openclip_dir, real_manifest, capsys):
    """--out's card and failure list beside it are the user's when medaudit did not write
    them: refused (even with --overwrite), never deleted or replaced."""
    manifest_path, _ = real_manifest
    out = tmp_path / "s.csv"
    mine = {tmp_path / "s.csv.failures.csv": b"my notes\n", tmp_path / "s.csv.card.json": b'{"my": 1}'}
    for p, b in mine.items():
        p.write_bytes(b)
        assert _score(manifest_path, out, tiny_openclip_dir, "--overwrite") == 2
        assert "replaces only" in capsys.readouterr().err and p.read_bytes() == b and not out.exists()
        p.unlink()
    (tmp_path / "theirs.csv").write_bytes(b"user,data\n1,2\n")
    assert _score(manifest_path, tmp_path / "theirs.csv", tiny_openclip_dir, "--overwrite") == 2
    assert (tmp_path / "theirs.csv").read_bytes() == b"user,data\n1,2\n"
    # its own files are replaced: with --overwrite the table, and the card of a killed run
    # (no table: it is written last) even without
    assert _score(manifest_path, out, tiny_openclip_dir) == 0
    first = out.read_bytes()
    out.unlink()
    assert _score(manifest_path, out, tiny_openclip_dir) == 0
    assert _score(manifest_path, out, tiny_openclip_dir, "--overwrite") == 0
    assert out.read_bytes() == first
    # a failure list of its own from an earlier run goes when this run has none
    (tmp_path / "s.csv.failures.csv").write_text("row,image_id,cohort,path,error\n0,a,c,p,e\n")
    assert _score(manifest_path, out, tiny_openclip_dir, "--overwrite") == 0
    assert not (tmp_path / "s.csv.failures.csv").exists()
    # a file name the writer would not honour is refused before anything is read
    assert _score(manifest_path, tmp_path / "s.txt", tiny_openclip_dir) == 2
    assert "end the file name with one of them" in capsys.readouterr().err


def test_a_manifest_without_patient_ids_scores(tmp_path, tiny_openclip_dir, real_manifest, capsys):
    """`medaudit manifest kermany` leaves patient_id empty throughout: scored without it;
    a column empty in places is refused naming the manifest's lines, before any image is read."""
    _, manifest = real_manifest
    m = manifest.assign(patient_id="")
    m.to_csv(tmp_path / "m.csv", index=False)
    assert _score(tmp_path / "m.csv", tmp_path / "s.csv", tiny_openclip_dir) == 0
    assert "patient_id" not in pd.read_csv(tmp_path / "s.csv").columns
    m.loc[:, "patient_id"] = [f"p{i}" for i in range(len(m))]
    m.loc[3, "patient_id"] = ""
    m.to_csv(tmp_path / "m2.csv", index=False)
    # weights that do not exist: the manifest is refused first, so nothing loads
    assert _score(tmp_path / "m2.csv", tmp_path / "s2.csv", tmp_path / "absent") == 2
    err = capsys.readouterr().err
    assert "column 'patient_id' is empty at line 5;" in err and "absent" not in err


def test_device_and_weights_errors_are_one_line(tmp_path, real_manifest, capsys):
    manifest_path, _ = real_manifest
    (tmp_path / "garbage.bin").write_text("garbage")
    for args, expect in ((["--device", "banana"], "device 'banana' is not a torch device"),
                         (["--weights", str(tmp_path / "garbage.bin"), "--device", "cpu"],
                          "could not be loaded as openclip")):
        rc = main(["score", str(manifest_path), "--model", "openclip", "--out",
                   str(tmp_path / "s.csv"), "--quiet", *args])
        err = capsys.readouterr().err
        assert rc == 2 and expect in err and "Traceback" not in err, err
        assert len(err.strip().splitlines()) == 1, err


def test_an_unreachable_hub_is_one_line_at_once(monkeypatch):
    """Probe finding: without --weights and without network the hub client retried for
    about a minute, printing each retry.  The hub is tried first (a TCP connection); when it
    cannot be reached the hub client runs in its offline mode (a copy in the local cache
    still loads, none fails at once); a proxy or HF_HUB_OFFLINE=1 leaves it to the client."""
    import socket

    from huggingface_hub import constants

    from medaudit.adapters import registry
    from medaudit.exceptions import MedauditError

    tried, offline_seen = [], []

    def refuse(address, timeout=None):
        tried.append(address)
        raise OSError("unreachable")

    def loader(entry, weights):
        offline_seen.append(constants.HF_HUB_OFFLINE)
        raise RuntimeError("the hub client's own failure")

    for k in ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy",
              "HF_HUB_OFFLINE", "HF_ENDPOINT"):
        monkeypatch.delenv(k, raising=False)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(registry, "_load_open_clip", loader)
    before = constants.HF_HUB_OFFLINE
    with pytest.raises(MedauditError, match=r"its hub is not reachable from this machine and no "
                                            r"copy is in the local Hugging Face cache.*--weights"):
        registry.load_encoder("openclip", device="cpu")
    assert tried == [("huggingface.co", 443)]
    assert offline_seen == [True] and constants.HF_HUB_OFFLINE == before  # restored
    # a copy in the cache loads offline: the loader's result is used
    monkeypatch.setattr(registry, "_load_open_clip", lambda entry, weights: (
        offline_seen.append(constants.HF_HUB_OFFLINE) or "model", "pre", "tok", "rev", "ckpt"))
    monkeypatch.setattr(registry, "ImageTextEncoder", lambda entry, **kw: kw)
    enc = registry.load_encoder("openclip", device="cpu")
    assert enc["model"] == "model" and enc["revision"] == "rev" and offline_seen[-1] is True
    monkeypatch.setattr(registry, "_load_open_clip", loader)
    monkeypatch.setenv("HF_ENDPOINT", "http://mirror.local:8080")
    with pytest.raises(MedauditError, match="not reachable"):
        registry.load_encoder("openclip", device="cpu")
    assert tried[-1] == ("mirror.local", 8080)
    n = len(tried)
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy:3128")
    with pytest.raises(MedauditError, match=r"could not fetch .*RuntimeError"):
        registry.load_encoder("openclip", device="cpu")
    assert len(tried) == n and offline_seen[-1] == before  # not tried behind a proxy
    monkeypatch.delenv("HTTPS_PROXY")
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")  # "0" is online: the probe runs
    with pytest.raises(MedauditError, match="not reachable"):
        registry.load_encoder("openclip", device="cpu")
    assert len(tried) == n + 1
