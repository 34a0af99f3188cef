"""Hostile inputs at the command line (issue 14): one case per bullet, as a user would type it.

Every case runs the real command in process (``main(argv)``) and asserts exit code 2, one line
on stderr that names the file, key or row, no traceback, and — for every case that could
destroy something — that every file present before is byte-identical afterwards (mode and
hidden files included).  The io-level pieces are tested in tests/io/test_hostile_io.py; this
module shows they are wired into the commands.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pandas as pd
import pytest
import yaml

from medaudit.cli.main import main
from medaudit.simulate import simulate_cohort
from tests._support import HANG
from tests._support import fails as _fails
from tests._support import snapshot as _snapshot

ROOT = Path(__file__).resolve().parents[2]
FAST = ["--n-resamples", "20", "--n-permutations", "19", "--quiet"]






@pytest.fixture
def work(tmp_path, monkeypatch):
    """A user's folder with a spec, a score table and notes; the current folder."""
    d = tmp_path / "work"
    d.mkdir()
    pd.DataFrame(simulate_cohort(n_pos=20, n_healthy=15, n_sick=15, rng=1)).to_csv(
        d / "scores.csv", index=False)
    (d / "spec.yaml").write_text("name: mine\nscores: scores.csv\nprimary_prompt: clinical\n"
                                 "n_resamples: 20\nn_permutations: 19\n"
                                 "cohorts: {simulated-tbx11k-val: {}}\nblocks: [discrimination]\n")
    (d / "notes.txt").write_text("my notes\n")
    monkeypatch.chdir(d)
    return d


# ------------------------------------------------------------------ destroys data
@pytest.mark.parametrize("out", ["{cwd}", ".", "scores.csv", "spec.yaml", "notes.txt", "{cwd}/sub/.."])
def test_audit_never_writes_over_what_the_user_owns(work, capsys, out):
    before = _snapshot(work)
    line = _fails(["audit", "spec.yaml", "--out", out.format(cwd=work), "--overwrite", "--quiet"],
                  capsys)
    assert any(k in line for k in ("current folder", "an input", "is a file", "spec.yaml"))
    assert _snapshot(work) == before
    assert not [p for p in work.parent.iterdir() if ".tmp-" in p.name or ".old-" in p.name]


def test_out_inside_the_score_table_folder_is_refused(work, capsys):
    (work / "data").mkdir()
    (work / "scores.csv").rename(work / "data" / "scores.csv")
    (work / "spec.yaml").write_text((work / "spec.yaml").read_text().replace(
        "scores.csv", "data/scores.csv"))
    before = _snapshot(work)
    line = _fails(["audit", "spec.yaml", "--out", "data", "--overwrite", "--quiet"], capsys)
    assert "contains the score table" in line
    assert _snapshot(work) == before


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory) -> Path:
    """One small demo audit for the tests that damage or re-render its folder (each on a copy)."""
    out = tmp_path_factory.mktemp("demo") / "run"
    assert main(["demo", "--out", str(out), "--scale", "0.02", *FAST]) == 0
    return out


def _copy(run: Path, tmp_path: Path) -> Path:
    import shutil

    out = tmp_path / "run"
    shutil.copytree(run, out, symlinks=True)
    return out


def test_report_out_over_its_results_is_refused(demo_run, tmp_path, capsys):
    out = _copy(demo_run, tmp_path)
    before = _snapshot(out)
    line = _fails(["report", out, "--out", out / "results.json"], capsys)
    assert "results.json" in line
    assert _snapshot(out) == before
    assert main(["report", str(out), "--quiet"]) == 0  # still a readable audit


def test_unwritable_out_is_refused_before_any_computation(work, capsys, monkeypatch):
    import medaudit.audit.run as run

    def never(*a, **k):
        raise AssertionError("the audit ran before the output folder was checked")

    monkeypatch.setattr(run, "audit", never)
    line = _fails(["audit", "spec.yaml", "--out", "notes.txt/out", "--quiet"], capsys)
    assert "notes.txt" in line
    if os.geteuid() != 0:  # root writes anywhere: the permission case needs another user
        ro = work / "ro"
        ro.mkdir()
        ro.chmod(0o555)
        line = _fails(["audit", "spec.yaml", "--out", ro / "out", "--quiet"], capsys)
        assert "ro" in line


# ------------------------------------------------------------------ tracebacks before
def test_negative_seeds_are_one_line(work, capsys):
    (work / "bad.yaml").write_text((work / "spec.yaml").read_text() + "seed: -3\n")
    assert "seed" in _fails(["audit", "bad.yaml", "--out", "o", "--quiet"], capsys)
    assert "seed" in _fails(["summarize", "scores.csv", "--out", "o", "--seed", "-1", *FAST],
                            capsys)


def test_non_utf8_spec_names_file_and_offset(work, capsys):
    (work / "bad.yaml").write_bytes(b"name: caf\xe9\n")
    line = _fails(["audit", "bad.yaml", "--out", "o", "--quiet"], capsys)
    assert "bad.yaml" in line and "byte offset 9" in line


def test_score_table_through_a_symlink_loop(work, capsys):
    (work / "loop.csv").symlink_to(work / "loop.csv")
    (work / "bad.yaml").write_text((work / "spec.yaml").read_text().replace("scores.csv", "loop.csv"))
    line = _fails(["audit", "bad.yaml", "--out", "o", "--quiet"], capsys)
    assert "loop.csv" in line and "loop" in line


@pytest.mark.parametrize("damage", ["truncate", "bad spec", "not an object", "bad blocks"])
def test_report_on_damaged_results(demo_run, tmp_path, capsys, damage):
    out = _copy(demo_run, tmp_path)
    path = out / "results.json"
    text = path.read_text()
    if damage == "truncate":
        path.write_text(text[: len(text) // 2])
    elif damage == "bad spec":
        data = json.loads(text)
        data["provenance"]["spec"]["n_resamples"] = "many"
        path.write_text(json.dumps(data))
    elif damage == "not an object":
        path.write_text("[1, 2, 3]")
    else:
        path.write_text(text.replace('"blocks": {', '"blocks": {"x": 3, ', 1))
    line = _fails(["report", out], capsys)
    assert "results.json" in line


# ------------------------------------------------------------------ hangs and limits
def test_alias_bomb_in_a_dataset_option_is_refused_at_once(work, capsys):
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x]"]
    for i in range(1, 9):
        lines.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]")
    bomb = "\n".join(lines) + "\n"
    (work / "bomb.yaml").write_text("name: b\nscores: scores.csv\ncohorts: {simulated-tbx11k-val: {}}\n"
                                    + bomb + "annotations: {format: nih, dataset: {findings: *a8}}\n")
    t0 = time.perf_counter()
    line = _fails(["audit", "bomb.yaml", "--out", "o", "--quiet"], capsys)
    assert time.perf_counter() - t0 < HANG
    assert "bomb.yaml" in line and "alias" in line


def test_ten_megabyte_scalar_is_refused_at_once(work, capsys):
    (work / "big.yaml").write_text("name: " + "x" * 10_000_000 + "\n")
    t0 = time.perf_counter()
    line = _fails(["audit", "big.yaml", "--out", "o", "--quiet"], capsys)
    assert time.perf_counter() - t0 < HANG and len(line) < 400


def test_a_billion_resamples_is_refused_before_computing(work, capsys):
    (work / "big.yaml").write_text((work / "spec.yaml").read_text().replace(
        "n_resamples: 20", "n_resamples: 1000000000"))
    t0 = time.perf_counter()
    line = _fails(["audit", "big.yaml", "--out", "o", "--quiet"], capsys)
    assert "n_resamples" in line and "allow-large" in line and time.perf_counter() - t0 < HANG


def test_the_same_minimum_b_for_every_command(work, capsys):
    assert "n_resamples" in _fails(["summarize", "scores.csv", "--out", "o", "--n-resamples", "1",
                                    "--quiet"], capsys)
    (work / "b1.yaml").write_text((work / "spec.yaml").read_text().replace("n_resamples: 20",
                                                                            "n_resamples: 1"))
    assert "n_resamples" in _fails(["audit", "b1.yaml", "--out", "o", "--quiet"], capsys)
    line = _fails(["summarize", "scores.csv", "--out", "o", "--n-permutations", "0", "--quiet"],
                  capsys)
    assert "n_permutations" in line and "n_resamples" not in line


# ------------------------------------------------------------------ silently accepted before
def test_repeated_key_names_the_key_and_lines(work, capsys):
    (work / "dup.yaml").write_text((work / "spec.yaml").read_text() + "n_resamples: 5000\n")
    line = _fails(["audit", "dup.yaml", "--out", "o", "--quiet"], capsys)
    assert "dup.yaml" in line and "n_resamples" in line


def test_misspelt_optional_column_is_refused(work, capsys):
    t = pd.read_csv(work / "scores.csv")
    t["label_sfot"] = t["label"].astype(float)
    t.to_csv(work / "scores.csv", index=False)
    line = _fails(["audit", "spec.yaml", "--out", "o", "--quiet"], capsys)
    assert "label_sfot" in line and "label_soft" in line


def test_ids_with_leading_zeros_stay_distinct(work, capsys):
    t = pd.read_csv(work / "scores.csv")
    ids = sorted(t["image_id"].unique())
    rename = {ids[0]: "007", ids[1]: "7", ids[2]: "001"}
    t["image_id"] = t["image_id"].map(lambda v: rename.get(v, v))
    t.to_csv(work / "scores.csv", index=False)
    assert main(["audit", "spec.yaml", "--out", "o", "--quiet"]) == 0
    data = yaml.safe_load((work / "o" / "results.json").read_text())
    assert data["provenance"]["cohorts"]["simulated-tbx11k-val"]["n"] == t["image_id"].nunique()



def test_cohort_and_model_names_that_look_like_numbers_stay_as_written(tmp_path, capsys):
    # probe finding: cohorts "01" and "1" were parsed as the number 1 and pooled into one
    # cohort without a word; "007" became "7" in init's spec, which then named no cohort
    import numpy as np
    rng = np.random.default_rng(5)
    rows = []
    for cohort in ("01", "1"):
        label = np.r_[np.ones(20, int), np.zeros(30, int)]
        for model in ("007", "7"):
            rows.append(pd.DataFrame({"image_id": [f"c{cohort}-{i}" for i in range(50)],
                                      "cohort": cohort, "model": model, "prompt": "p",
                                      "score": rng.random(50) * 0.5 + 0.4 * label,
                                      "label": label}))
    pd.concat(rows).to_csv(tmp_path / "s.csv", index=False)
    out = tmp_path / "o"
    assert main(["summarize", str(tmp_path / "s.csv"), "--out", str(out), "--n-resamples", "50",
                 "--n-permutations", "19", "--quiet"]) == 0
    doc = json.loads((out / "results.json").read_text(encoding="utf-8"))
    assert set(doc["provenance"]["cohorts"]) == {"01", "1"}
    assert {c["n"] for c in doc["provenance"]["cohorts"].values()} == {50}
    auroc = pd.read_csv(out / "tables" / "discrimination__metrics.csv", dtype=str)
    assert set(auroc["model"]) == {"007", "7"} and set(auroc["cohort"]) == {"01", "1"}
    assert main(["init", str(tmp_path / "s.csv"), "--out", str(tmp_path / "spec.yaml")]) == 0
    spec = yaml.safe_load((tmp_path / "spec.yaml").read_text(encoding="utf-8"))
    assert set(spec["cohorts"]) == {"01", "1"}


# ------------------------------------------------------------------ messages
def test_malformed_yaml_is_one_labelled_line(work, capsys):
    (work / "bad.yaml").write_text("name: x\ncohorts: {a: [1, 2}\n")
    line = _fails(["audit", "bad.yaml", "--out", "o", "--quiet"], capsys)
    assert "bad.yaml:2:" in line and "<unicode string>" not in line


def test_manifest_of_an_empty_folder_names_it(tmp_path, capsys):
    (tmp_path / "EMPTY").mkdir()
    line = _fails(["manifest", "montgomery", tmp_path / "EMPTY", "--out", tmp_path / "m.csv",
                   "--quiet"], capsys)
    assert "EMPTY" in line
