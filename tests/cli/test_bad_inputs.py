"""Bad input to the newer sub-commands ends in one clear line on stderr and exit code 2, no output."""

from __future__ import annotations

import pytest

from medaudit.cli.main import main


def _run(argv, capsys):
    rc = main([str(a) for a in argv])
    err = capsys.readouterr().err.strip()
    return rc, err


def _one_line(err: str) -> str:
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("medaudit: error: "), err
    assert "Traceback" not in err
    return lines[0]


@pytest.fixture
def files(tmp_path):
    (tmp_path / "empty.csv").write_text("")
    (tmp_path / "folder").mkdir()
    (tmp_path / "ok.csv").write_text("image_id,path,cohort,label\nx,x.png,c,1\n")
    return tmp_path


def test_score_manifest_is_a_directory(files, capsys):
    out = files / "s.csv"
    rc, err = _run(["score", files / "folder", "--model", "openclip", "--out", out], capsys)
    assert rc == 2
    assert str(files / "folder") in _one_line(err) and "directory" in err
    assert not out.exists()


def test_score_manifest_empty_file(files, capsys):
    out = files / "s.csv"
    rc, err = _run(["score", files / "empty.csv", "--model", "openclip", "--out", out], capsys)
    assert rc == 2
    assert str(files / "empty.csv") in _one_line(err) and "empty" in err
    assert not out.exists()


def test_score_out_is_a_directory_fails_before_the_model_loads(files, capsys):
    out = files / "folder"
    rc, err = _run(["score", files / "ok.csv", "--model", "openclip", "--out", out, "--overwrite"],
                   capsys)
    assert rc == 2
    assert "--out" in _one_line(err) and str(out) in err
    assert list(out.iterdir()) == []


def test_score_unknown_family_fails_before_the_model_loads(files, capsys):
    # without the early check this tried to download open_clip weights (RuntimeError traceback)
    out = files / "s.csv"
    rc, err = _run(["score", files / "ok.csv", "--model", "openclip", "--out", out,
                    "--families", "telepathy"], capsys)
    assert rc == 2
    assert "telepathy" in _one_line(err) and "family" in err
    assert not out.exists() and not (files / "s.csv.card.json").exists()


@pytest.mark.parametrize("target", ["manifest", "weights", "cache", "card beside"])
def test_score_never_writes_over_its_inputs_even_with_overwrite(files, capsys, target):
    """--out (or the card/failure files beside it) on the manifest, the weights file or
    inside the embedding cache is refused before the model loads; every input is kept."""
    weights = files / "w.pt"
    weights.write_bytes(b"weights")
    cache = files / "cache"
    cache.mkdir()
    (cache / "keep.npy").write_bytes(b"emb")
    manifest = files / "ok.csv"
    if target == "card beside":  # the manifest is the card file that --out m.csv writes beside it
        manifest = files / "m.csv.card.json"
        manifest.write_text((files / "ok.csv").read_text())
    out = {"manifest": manifest, "weights": weights, "cache": cache / "s.csv",
           "card beside": files / "m.csv"}[target]
    before = {p: p.read_bytes() for p in (manifest, weights, cache / "keep.npy")}
    rc, err = _run(["score", manifest, "--model", "openclip", "--out", out, "--weights", weights,
                    "--cache", cache, "--overwrite"], capsys)
    assert rc == 2
    line = _one_line(err)
    assert "an input of this run" in line and "--out" in line
    assert {p: p.read_bytes() for p in before} == before
    assert not (files / "m.csv").exists() and not (cache / "s.csv").exists()


@pytest.mark.parametrize("name", ["folder", "empty.csv"])
def test_overlap_manifest_directory_or_empty(files, capsys, name):
    out = files / "ov"
    rc, err = _run(["overlap", files / name, "--out", out], capsys)
    assert rc == 2
    assert str(files / name) in _one_line(err)
    assert not out.exists()


def test_manifest_root_is_a_file(files, capsys):
    out = files / "m.csv"
    rc, err = _run(["manifest", "kermany", files / "empty.csv", "--out", out], capsys)
    assert rc == 2
    assert str(files / "empty.csv") in _one_line(err)
    assert not out.exists() and not (files / "m.json").exists()


@pytest.mark.parametrize("command", [["audit"], ["train", "supervised"]])
def test_spec_is_a_directory(files, capsys, command):
    out = files / "o"
    rc, err = _run([*command, files / "folder", "--out", out], capsys)
    assert rc == 2
    assert str(files / "folder") in _one_line(err)
    assert not out.exists()


@pytest.mark.parametrize("name", ["scores.csv", "scores.parquet"])
def test_a_score_table_given_as_the_spec_points_at_medaudit_init(tmp_path, capsys, name):
    import pandas as pd

    table = tmp_path / name
    df = pd.DataFrame({"image_id": ["a", "b"], "model": "m", "score": [0.2, 0.8], "label": [0, 1]})
    df.to_csv(table, index=False) if name.endswith(".csv") else df.to_parquet(table)
    out = tmp_path / "out"
    rc, err = _run(["audit", table, "--out", out], capsys)
    assert rc == 2
    line = _one_line(err)
    assert "looks like a score table" in line and f"medaudit init {table}" in line
    assert not out.exists()


def test_a_table_with_prompts_and_a_spec_without_primary_prompt(tmp_path, capsys):
    import pandas as pd

    rows = [{"image_id": f"i{i}", "cohort": "c", "model": "a", "prompt": p, "score": (i % 7) / 7,
             "label": i % 2} for i in range(40) for p in ("p1", "p2")]
    pd.DataFrame(rows).to_csv(tmp_path / "s.csv", index=False)
    (tmp_path / "spec.yaml").write_text("scores: s.csv\nn_resamples: 20\n")
    rc, err = _run(["audit", tmp_path / "spec.yaml", "--out", tmp_path / "out"], capsys)
    assert rc == 2
    line = _one_line(err)
    assert "the table has a prompt column" in line and "`primary_prompt: p1`" in line
    assert "unknown prompt 'none'" not in line
    # a claim naming no cohort when the cohorts come from the table: the table's, not the spec's
    rows = [{**r, "cohort": c} for r in rows if r["prompt"] == "p1" for c in ("c1", "c2")]
    pd.DataFrame(rows).to_csv(tmp_path / "s.csv", index=False)
    (tmp_path / "spec.yaml").write_text("scores: s.csv\nn_resamples: 20\nprimary_prompt: p1\n"
                                        "claims: [{model: a, at_least: 0.5, cohort: c3}]\n")
    rc, err = _run(["audit", tmp_path / "spec.yaml", "--out", tmp_path / "out"], capsys)
    line = _one_line(err)
    assert rc == 2 and "unknown cohort 'c3'" in line and "the table has ['c1', 'c2']" in line
    assert "`cohorts:` declares" not in line
