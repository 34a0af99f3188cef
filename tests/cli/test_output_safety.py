"""What ``--out`` and ``--overwrite`` may replace, as a user would type the commands.

Each case runs the real command in process (``main(argv)``) and checks the exit code, the
one error line (naming the files and what to do) and the folder on disk: every file
present before a refused command is byte-identical afterwards.  Rules (docs/conventions.md,
"Files read and written"):

* an output folder's marker lists what medaudit wrote there (the manifest); ``--overwrite``
  refuses a folder holding anything else, and the "already written" shortcut needs every
  listed file as it was written;
* ``report DIR`` re-renders in place only over what medaudit wrote there;
* ``report --out FILE``, ``plan --out FILE`` and ``claims export --out FILE`` replace an
  existing file only with ``--overwrite`` and only a file medaudit wrote of that kind, and
  never an input of the audit.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest

from medaudit.cli.main import main
from medaudit.io.output import MARKER, foreign_files, is_medaudit_output
from medaudit.simulate import simulate_cohort
from tests._support import fails as _fails
from tests._support import snapshot as _snapshot

SPEC = ("name: mine\nscores: scores.csv\nprimary_prompt: clinical\nn_resamples: 20\n"
        "n_permutations: 19\ncohorts: {simulated-tbx11k-val: {}}\nblocks: [discrimination]\n"
        "claims:\n  declared:\n    - {model: sim-clip-a, metric: roc_auc, at_least: 0.99}\n")






@pytest.fixture(scope="module")
def finished(tmp_path_factory) -> Path:
    """A user's folder: spec.yaml, scores.csv and the finished audit ``out`` (copied per test)."""
    d = tmp_path_factory.mktemp("finished") / "work"
    d.mkdir()
    pd.DataFrame(simulate_cohort(n_pos=20, n_healthy=15, n_sick=15, rng=1)).to_csv(
        d / "scores.csv", index=False)
    (d / "spec.yaml").write_text(SPEC)
    assert main(["audit", str(d / "spec.yaml"), "--out", str(d / "out"), "--quiet"]) == 0
    return d


@pytest.fixture
def work(finished, tmp_path, monkeypatch) -> Path:
    import shutil

    d = tmp_path / "work"
    shutil.copytree(finished, d, symlinks=True)
    monkeypatch.chdir(d)
    return d


# ------------------------------------------------------------------ the manifest


def test_the_marker_lists_every_file_written_and_nothing_else_changes(work, tmp_path):
    marker = json.loads((work / "out" / MARKER).read_text())
    on_disk = {p.relative_to(work / "out").as_posix(): p for p in (work / "out").rglob("*")
               if p.is_file() and p.name != MARKER}
    assert set(marker["files"]) == set(on_disk)
    for rel, p in on_disk.items():
        assert marker["files"][rel]["bytes"] == p.stat().st_size
    assert {"figures", "tables"} <= set(marker["folders"])
    # same inputs => byte-identical folders, the marker included
    assert main(["audit", "spec.yaml", "--out", str(tmp_path / "again"), "--quiet"]) == 0
    assert _snapshot(tmp_path / "again") == _snapshot(work / "out")


# ------------------------------------------------------------------ 2: --overwrite


@pytest.mark.parametrize("extra", ["mynotes.txt", "tables/extra/f", "figures/mine.png"])
def test_overwrite_refuses_a_folder_holding_files_of_the_user(work, capsys, extra):
    (work / "out" / extra).parent.mkdir(parents=True, exist_ok=True)
    (work / "out" / extra).write_text("notes\n")
    before = _snapshot(work)
    line = _fails(["audit", "spec.yaml", "--out", "out", "--overwrite", "--quiet"], capsys)
    named = "tables/extra/" if extra.startswith("tables/extra") else extra
    assert named in line and "did not write" in line and "Move them" in line, line
    assert _snapshot(work) == before
    assert not [p for p in work.iterdir() if ".tmp-" in p.name or ".old-" in p.name]


def test_overwrite_names_five_foreign_files_and_counts_the_rest(work, capsys):
    for i in range(7):
        (work / "out" / f"n{i}.txt").write_text("x")
    before = _snapshot(work)
    line = _fails(["audit", "spec.yaml", "--out", "out", "--overwrite", "--quiet"], capsys)
    assert "n4.txt" in line and "n5.txt" not in line and "and 2 more" in line, line
    assert _snapshot(work) == before


def test_overwrite_of_what_medaudit_wrote_still_works(work):
    before = _snapshot(work / "out")
    (work / "out" / "summary.md").write_text("edited by hand\n")  # medaudit's file: replaced
    assert main(["audit", "spec.yaml", "--out", "out", "--overwrite", "--quiet"]) == 0
    assert _snapshot(work / "out") == before


def test_an_old_marker_without_a_manifest_is_refused(work, capsys):
    marker = json.loads((work / "out" / MARKER).read_text())
    old = {k: marker[k] for k in ("medaudit_output", "run_id", "tool", "version")}
    (work / "out" / MARKER).write_text(json.dumps(old, sort_keys=True) + "\n")
    before = _snapshot(work)
    for argv in (["audit", "spec.yaml", "--out", "out", "--overwrite", "--quiet"],
                 ["audit", "spec.yaml", "--out", "out", "--quiet"], ["report", "out"]):
        line = _fails(argv, capsys)
        assert "earlier medaudit" in line and "does not list the files" in line, line
        assert _snapshot(work) == before


# ------------------------------------------------------------------ 5: a damaged folder


def test_a_damaged_folder_is_not_taken_for_the_finished_output(work, capsys):
    whole = _snapshot(work / "out")
    (work / "out" / "tables" / "discrimination__metrics.csv").unlink()
    for p in (work / "out" / "figures").iterdir():
        p.unlink()
    (work / "out" / "figures").rmdir()
    (work / "out" / "summary.md").write_text("x" * len((work / "out" / "summary.md").read_bytes()))
    before = _snapshot(work)
    rc = main(["audit", "spec.yaml", "--out", "out"])
    cap = capsys.readouterr()
    assert rc == 2 and "nothing to do" not in cap.out, cap.out
    line = cap.err.strip()
    assert line.count("\n") == 0 and "incomplete or changed" in line and "--overwrite" in line
    for name in ("tables/discrimination__metrics.csv", "figures/", "summary.md"):
        assert name in line, line
    assert _snapshot(work) == before
    # --overwrite rebuilds it, byte for byte; then the same command has nothing to do
    assert main(["audit", "spec.yaml", "--out", "out", "--overwrite", "--quiet"]) == 0
    assert _snapshot(work / "out") == whole
    capsys.readouterr()
    assert main(["audit", "spec.yaml", "--out", "out"]) == 0
    assert "nothing to do" in capsys.readouterr().out


# ------------------------------------------------------------------ 3: report in place


def test_report_in_place_refuses_foreign_figures_and_keeps_the_manifest(work, capsys):
    (work / "out" / "figures" / "my_annotated.png").write_bytes(b"mine")
    before = _snapshot(work)
    line = _fails(["report", "out"], capsys)
    assert "my_annotated.png" in line and "--out page.html" in line, line
    assert _snapshot(work) == before
    (work / "out" / "figures" / "my_annotated.png").unlink()
    whole = _snapshot(work / "out")
    assert main(["report", "out", "--quiet"]) == 0
    assert _snapshot(work / "out") == whole  # the same bytes, the marker included


def test_report_in_place_records_figures_whose_bytes_changed(work):
    """A re-render whose figures differ in their bytes (another matplotlib, another font)
    lists them anew in the manifest: left out, the finished audit would later read as
    changed by hand ("incomplete or changed: figures/...")."""
    import dataclasses

    from medaudit.audit.outcome import load_outcome
    from medaudit.io.output import changed_files
    from medaudit.report.html import Report, write_report

    outcome = load_outcome(work / "out")
    drawn = Report(outcome).figures
    other = [dataclasses.replace(f, svg=f.svg + "<!-- another renderer -->") for f in drawn]
    write_report(outcome, work / "out", figures=other)
    assert changed_files(work / "out") == []
    assert main(["audit", "spec.yaml", "--out", "out", "--quiet"]) == 0  # nothing to do


def test_report_in_place_refuses_a_page_of_the_user(work, capsys):
    (work / "out" / "report.html").write_text("<html>my edits</html>\n")
    before = _snapshot(work)
    line = _fails(["report", "out"], capsys)
    assert "report.html" in line and "not an HTML report medaudit wrote" in line, line
    assert _snapshot(work) == before


# ------------------------------------------------------------------ 1: report / plan --out FILE


@pytest.mark.parametrize("command", ["report", "plan"])
@pytest.mark.parametrize("target", ["scores.csv", "spec.yaml", "out/results.json", "copy.csv"])
def test_out_file_never_replaces_an_input_of_the_audit(work, capsys, command, target):
    (work / "copy.csv").write_bytes((work / "scores.csv").read_bytes())  # the table, elsewhere
    before = _snapshot(work)
    for flags in ([], ["--overwrite"]):
        _fails([command, "out", "--out", target, *flags], capsys)
        assert _snapshot(work) == before


def test_an_input_is_named_as_such(work, capsys):
    line = _fails(["plan", "out", "--out", "scores.csv", "--overwrite"], capsys)
    assert "score table" in line and "input" in line, line
    (work / "copy.csv").write_bytes((work / "scores.csv").read_bytes())
    line = _fails(["report", "out", "--out", "copy.csv", "--overwrite"], capsys)
    assert "same bytes as the audit's score table" in line, line


@pytest.mark.parametrize(("command", "name", "theirs"), [
    ("report", "page.html", "<!DOCTYPE html>\n<html><body>my page</body></html>\n"),
    ("plan", "plan.csv", "claim_id,my_notes\nD01,keep\n"),
    ("plan", "plan.md", "# My plan\n"),
])
def test_out_file_needs_overwrite_and_replaces_only_its_own_kind(work, capsys, command, name, theirs):
    assert main([command, "out", "--out", name, "--quiet"]) == 0
    mine = (work / name).read_bytes()
    before = _snapshot(work)
    line = _fails([command, "out", "--out", name], capsys)
    assert "exists" in line and "--overwrite" in line, line
    assert _snapshot(work) == before
    assert main([command, "out", "--out", name, "--overwrite", "--quiet"]) == 0
    assert (work / name).read_bytes() == mine
    (work / name).write_text(theirs)
    before = _snapshot(work)
    line = _fails([command, "out", "--out", name, "--overwrite"], capsys)
    assert "medaudit wrote" in line, line
    assert _snapshot(work) == before


# ------------------------------------------------------------------ 4: claims export --out FILE


def test_claims_export_overwrite_replaces_only_a_claims_file(work, capsys):
    (work / "copy.json").write_bytes((work / "scores.csv").read_bytes())
    (work / "mine.json").write_text('{"schema_version": "1.0", "my": "data"}\n')
    before = _snapshot(work)
    line = _fails(["claims", "export", "out", "--out", "scores.csv", "--overwrite"], capsys)
    assert ".json" in line, line
    line = _fails(["claims", "export", "out", "--out", "copy.json", "--overwrite"], capsys)
    assert "input of the audit" in line, line
    line = _fails(["claims", "export", "out", "--out", "mine.json", "--overwrite"], capsys)
    assert "not a claims file medaudit wrote" in line, line
    line = _fails(["claims", "export", "out", "--out", "m.txt"], capsys)
    assert ".json" in line, line
    assert _snapshot(work) == before
    assert main(["claims", "export", "out", "--out", "m.claims.json", "--quiet"]) == 0
    first = (work / "m.claims.json").read_bytes()
    assert main(["claims", "export", "out", "--out", "m.claims.json", "--overwrite", "--quiet"]) == 0
    assert (work / "m.claims.json").read_bytes() == first


def test_report_refuses_results_edited_after_the_audit(tmp_path, capsys):
    """An edited number in results.json (a claim's estimate set to 0.99) is not drawn as
    medaudit's: `medaudit report` refuses, in place and with --out (probe finding)."""
    import json

    from medaudit.cli.main import main as cli

    spec = tmp_path / "s.yaml"
    spec.write_text("simulate: paper000\nsimulate_scale: 0.02\nn_resamples: 20\n"
                    "n_permutations: 19\nprimary_prompt: clinical\nblocks: [discrimination]\n")
    out = tmp_path / "out"
    assert cli(["audit", str(spec), "--out", str(out), "--quiet"]) == 0
    assert cli(["report", str(out), "--quiet"]) == 0  # untouched: re-rendered
    p = out / "results.json"
    d = json.loads(p.read_text(encoding="utf-8"))
    d["portability"][0]["estimate"] = 0.99
    p.write_text(json.dumps(d), encoding="utf-8")
    before = (out / "report.html").read_bytes()
    capsys.readouterr()
    for extra in ([], ["--out", str(tmp_path / "page.html")]):
        assert cli(["report", str(out), *extra]) == 2
        err = capsys.readouterr().err
        assert "results.json was changed after medaudit wrote it" in err
    assert (out / "report.html").read_bytes() == before and not (tmp_path / "page.html").exists()
    # probe finding: claims export sealed the edited numbers with a fresh hash, and port and
    # plan judged them; every reader of results.json refuses them (one check, in io.output)
    site = tmp_path / "site.yaml"
    site.write_text(spec.read_text())
    for argv in (["claims", "export", str(out), "--out", str(tmp_path / "m.claims.json")],
                 ["claims", "export", str(p), "--out", str(tmp_path / "m.claims.json")],
                 ["port", str(out), str(site), "--out", str(tmp_path / "pm")],
                 ["plan", str(out)]):
        assert cli(argv) == 2, argv
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "results.json was changed after medaudit wrote it" in err, err
    assert sorted(x.name for x in tmp_path.iterdir()) == ["out", "s.yaml", "site.yaml"]
    import medaudit
    from medaudit.exceptions import MedauditError

    with pytest.raises(MedauditError, match="changed after medaudit wrote it"):
        medaudit.port(out, spec=site)


def test_a_yaml_file_given_as_results_is_named_as_such(tmp_path, capsys):
    from medaudit.cli.main import main as cli

    spec = tmp_path / "s.yaml"
    spec.write_text("scores: x.csv\n")
    assert cli(["claims", "export", str(spec)]) == 2
    assert "is a YAML file (an audit spec?), not results.json" in capsys.readouterr().err


def test_a_table_given_as_results_is_named_as_such(tmp_path, capsys):
    # a CSV was called "not valid JSON ...; the file is damaged or truncated"
    from medaudit.cli.main import main as cli

    table = tmp_path / "s.csv"
    table.write_text("image_id,model,score,label\na,m,0.2,0\n")
    assert cli(["claims", "export", str(table), "--out", str(tmp_path / "x.claims.json")]) == 2
    err = capsys.readouterr().err
    assert "is a table (.csv), not results.json" in err and "damaged" not in err
    assert not (tmp_path / "x.claims.json").exists()


def test_nothing_is_written_inside_a_folder_medaudit_wrote(tmp_path, capsys):
    """Probe finding: plan, report --out and summarize wrote into a finished audit folder (or
    over another audit's report.html), whose manifest then did not match: the audit was
    disowned ('holds files medaudit did not write') or called incomplete. Refused now."""
    from medaudit.cli.main import main as cli

    spec = tmp_path / "s.yaml"
    spec.write_text("simulate: paper000\nsimulate_scale: 0.02\nn_resamples: 20\n"
                    "n_permutations: 19\nprimary_prompt: clinical\nblocks: [discrimination]\n")
    a, b = tmp_path / "a", tmp_path / "b"
    assert cli(["audit", str(spec), "--out", str(a), "--quiet"]) == 0
    shutil.copytree(a, b)  # a second finished audit folder (a copy is one: its own marker)
    assert is_medaudit_output(b) and foreign_files(b) == []
    capsys.readouterr()
    scores = tmp_path / "scores.csv"
    pd.DataFrame({"image_id": [f"i{k}" for k in range(40)], "model": "m",
                  "score": [k / 40 for k in range(40)], "label": [0, 1] * 20}).to_csv(scores, index=False)
    before = _snapshot(tmp_path)
    for argv in (["plan", str(a), "--out", str(a / "plan.csv")],
                 ["report", str(a), "--out", str(a / "other.html")],
                 ["report", str(a), "--out", str(b / "report.html"), "--overwrite"],
                 ["summarize", str(scores), "--out", str(b / "x"), "--n-resamples", "20"],
                 ["audit", str(spec), "--out", str(a / "tables" / "again")]):
        assert cli(argv) == 2, argv
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "a folder medaudit wrote" in err, (argv, err)
    assert _snapshot(tmp_path) == before
    assert cli(["audit", str(spec), "--out", str(a), "--overwrite", "--quiet"]) == 0


def test_a_folder_given_as_the_score_table_is_named_as_such(tmp_path, capsys):
    """Probe finding: `scores: .` read as an --out 'inside the score table folder'."""
    from medaudit.cli.main import main as cli

    (tmp_path / "dot.yaml").write_text("scores: .\n")
    assert cli(["audit", str(tmp_path / "dot.yaml"), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "spec key scores:" in err
    assert "is a folder; give the score table file" in err
    assert not (tmp_path / "o").exists()


def test_report_out_under_home_is_written_where_it_was_checked(work, tmp_path, monkeypatch, capsys):
    """Review finding: `report --out '~/r.html'` checked $HOME/r.html but wrote ./~/r.html,
    over a file of the user's there.  The page goes where the check looked."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    (work / "~").mkdir()
    (work / "~" / "r.html").write_text("MY NOTES")
    assert main(["report", "out", "--out", "~/r.html", "--quiet"]) == 0
    assert (work / "~" / "r.html").read_text() == "MY NOTES"
    assert (home / "r.html").read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    capsys.readouterr()
