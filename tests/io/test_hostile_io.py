"""Hostile inputs at the io level (issue 14): nothing a user owns is destroyed, nothing hangs.

One case per bullet of the issue that the io layer owns.  Each asserts the exception type, a
one-line message naming the file/key/row, and for a destructive case that every file present
before is byte-identical afterwards (contents and permissions, hidden files included).

Witnesses: the file system itself (snapshots before and after, ``os.stat`` modes, a real
``kill -9`` of a child process, writes to ``/dev/full`` for a genuinely full device, a
non-root user via ``setpriv`` for a real permission failure), PyYAML's own parser (what the
loader returns equals ``yaml.safe_load`` on the example specs), NumPy's ``SeedSequence``
(every seed the limits accept seeds it), pandas' CSV reader (written floats read back
bit-identical) and the stubbed commands of ``.ci/run``.
"""

from __future__ import annotations

import errno
import hashlib
import json
import math
import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from medaudit.cli.main import main
from medaudit.exceptions import MedauditError, SchemaError
from medaudit.io import limits
from medaudit.io.messages import quote, shorten
from medaudit.io.output import (
    MARKER,
    OutputPathError,
    atomic_directory,
    atomic_write_bytes,
    changed_files,
    check_output_dir,
    check_output_file,
    foreign_files,
    is_medaudit_output,
    record_written,
    remove_stale_temps,
    write_csv,
    write_json,
)
from medaudit.io.schema import SCORE_COLUMNS, unknown_columns, validate_score_table
from medaudit.io.tables import ID_COLUMNS, ids_as_text, read_table, read_wide
from medaudit.io.yaml import MAX_ALIASES, YAMLFileError, load_yaml, load_yaml_text
from medaudit.simulate import simulate_cohort
from tests._support import HANG
from tests._support import snapshot as _snapshot

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src"
FAST = ["--n-resamples", "200", "--n-permutations", "199", "--quiet"]


# --------------------------------------------------------------------------- helpers



def _one_line(msg: str) -> str:
    assert "\n" not in msg and "Traceback" not in msg, msg
    return msg


def _cli(argv, capsys) -> tuple[int, str]:
    rc = main([str(a) for a in argv])
    err = capsys.readouterr().err.strip()
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("medaudit: error: "), err
    return rc, lines[0]


@pytest.fixture
def workdir(tmp_path, monkeypatch):
    """A user's folder: a spec, a score table, notes; the current folder during the test."""
    d = tmp_path / "work"
    d.mkdir()
    pd.DataFrame(simulate_cohort(n_pos=20, n_healthy=15, n_sick=15, rng=1)).to_csv(
        d / "scores.csv", index=False)
    (d / "spec.yaml").write_text("name: mine\nscores: scores.csv\n")
    (d / "notes.txt").write_text("my notes\n")
    (d / ".hidden").write_text("dotfile\n")
    monkeypatch.chdir(d)
    return d


# ============================================================ 1. output-folder contract

def test_out_is_the_current_folder_with_overwrite(workdir, capsys):
    before = _snapshot(workdir)
    with pytest.raises(OutputPathError) as e:
        check_output_dir(Path.cwd(), overwrite=True)
    assert "current folder" in _one_line(str(e.value)) and str(workdir) in str(e.value)
    # the whole command, as the issue ran it: it used to delete spec, scores and notes
    rc, line = _cli(["demo", "--out", workdir, "--overwrite", *FAST], capsys)
    assert rc == 2 and "current folder" in line
    rc, line = _cli(["summarize", "scores.csv", "--out", workdir, "--overwrite", *FAST], capsys)
    assert rc == 2 and "current folder" in line
    assert _snapshot(workdir) == before


def test_out_dot_leaves_no_temporary(workdir, capsys):
    before = _snapshot(workdir)
    rc, line = _cli(["demo", "--out", ".", "--overwrite", *FAST], capsys)
    assert rc == 2 and "'.'" in line and "current folder" in line
    assert _snapshot(workdir) == before  # no '..tmp-XXXX' behind
    assert not [p for p in workdir.parent.iterdir() if ".tmp-" in p.name]


def test_out_containing_the_current_folder(workdir):
    with pytest.raises(OutputPathError, match="contains the current folder"):
        check_output_dir(workdir.parent, overwrite=True)


def test_out_is_a_plain_file(workdir, capsys):
    (workdir / "precious.txt").write_text("irreplaceable\n")
    before = _snapshot(workdir)
    with pytest.raises(OutputPathError) as e:
        check_output_dir("precious.txt", overwrite=True)
    assert "'precious.txt' is a file, not a folder" in _one_line(str(e.value))
    rc, line = _cli(["demo", "--out", "precious.txt", "--overwrite", *FAST], capsys)
    assert rc == 2 and "precious.txt" in line and "is a file" in line
    assert _snapshot(workdir) == before


def test_out_is_the_input_table(workdir, capsys):
    before = _snapshot(workdir)
    with pytest.raises(OutputPathError) as e:
        check_output_dir("scores.csv", inputs={"score table": "scores.csv"}, overwrite=True)
    assert "is the score table 'scores.csv', an input" in _one_line(str(e.value))
    # the input given through another spelling of the same path is still the input
    with pytest.raises(OutputPathError, match="is the score table"):
        check_output_dir(workdir / "." / "scores.csv", inputs={"score table": "scores.csv"},
                         overwrite=True)
    # today's command (inputs not yet passed by the CLI): refused as a plain file
    rc, line = _cli(["summarize", "scores.csv", "--out", "scores.csv", "--overwrite", *FAST],
                    capsys)
    assert rc == 2 and "scores.csv" in line
    assert _snapshot(workdir) == before
    assert not [p for p in workdir.iterdir() if p.name.startswith(".scores.csv")]


def test_out_is_the_spec(workdir):
    before = _snapshot(workdir)
    for overwrite in (False, True):
        with pytest.raises(OutputPathError) as e:
            check_output_dir("spec.yaml", inputs={"audit spec": "spec.yaml"}, overwrite=overwrite)
        assert "is the audit spec 'spec.yaml'" in _one_line(str(e.value))
    assert _snapshot(workdir) == before


def test_audit_out_spec_with_overwrite_destroys_nothing(tmp_path, capsys):
    d = yaml.safe_load((ROOT / "examples" / "paper000_simulated.yaml").read_text())
    d.update({"simulate_scale": 0.05, "n_resamples": 20, "n_permutations": 19})
    spec = tmp_path / "spec.yaml"
    spec.write_text(yaml.safe_dump(d))
    before = _snapshot(tmp_path)
    rc, line = _cli(["audit", spec, "--out", spec, "--overwrite", "--quiet"], capsys)
    assert rc == 2 and str(spec) in line
    assert _snapshot(tmp_path) == before


def test_out_contains_an_input(tmp_path):
    out = tmp_path / "old-run"
    with atomic_directory(out) as tmp:  # a medaudit folder ...
        (tmp / "metrics.csv").write_text("a\n")
    (out / "scores.csv").write_text("mine\n")  # ... into which the user put an input
    before = _snapshot(tmp_path)
    with pytest.raises(OutputPathError) as e:
        check_output_dir(out, inputs={"score table": out / "scores.csv"}, overwrite=True)
    assert "contains the score table" in _one_line(str(e.value))
    with pytest.raises(OutputPathError, match="contains the score table"), \
            atomic_directory(out, overwrite=True, inputs={"score table": out / "scores.csv"}):
        pytest.fail("the body must not run")
    assert _snapshot(tmp_path) == before


def test_out_inside_an_input_folder(tmp_path):
    images = tmp_path / "images"
    images.mkdir()
    (images / "a.png").write_bytes(b"png")
    before = _snapshot(tmp_path)
    with pytest.raises(OutputPathError) as e:
        check_output_dir(images / "out", inputs={"image folder": images})
    assert "is inside the image folder" in _one_line(str(e.value))
    assert _snapshot(tmp_path) == before


def test_out_with_foreign_content_is_refused(tmp_path):
    out = tmp_path / "results"
    out.mkdir()
    (out / "thesis.tex").write_text("years of work\n")
    before = _snapshot(tmp_path)
    with pytest.raises(OutputPathError) as e:
        check_output_dir(out, overwrite=True)
    msg = _one_line(str(e.value))
    assert "thesis.tex" in msg and MARKER in msg
    with pytest.raises(OutputPathError), atomic_directory(out, overwrite=True):
        pytest.fail("the body must not run")
    # without --overwrite the same refusal, not advice to pass a flag that is refused too
    # (a new user's finding)
    with pytest.raises(OutputPathError) as e:
        check_output_dir(out)
    assert "thesis.tex" in str(e.value) and "pass --overwrite" not in str(e.value)
    assert _snapshot(tmp_path) == before


def test_overwrite_replaces_only_a_marked_folder(tmp_path):
    out = tmp_path / "results"
    with atomic_directory(out) as tmp:
        (tmp / "old.csv").write_text("old\n")
    assert is_medaudit_output(out)
    with atomic_directory(out, overwrite=True) as tmp:
        (tmp / "new.csv").write_text("new\n")
        (tmp / "figures").mkdir()
    assert sorted(p.name for p in out.iterdir()) == [MARKER, "figures", "new.csv"]
    # a folder inside an output belongs to it (report re-renders DIR/figures)
    assert is_medaudit_output(out / "figures")
    # ... written as a part of it only (within_output); any other folder inside a medaudit
    # output is refused, so a later --overwrite of it never meets a file it does not list
    with pytest.raises(OutputPathError, match="is inside .* a folder medaudit wrote"), \
            atomic_directory(out / "figures", overwrite=True):
        pytest.fail("the body must not run")
    with pytest.raises(OutputPathError, match="is inside .* a folder medaudit wrote"):
        check_output_dir(out / "other")
    with atomic_directory(out / "figures", overwrite=True, within_output=True) as tmp:
        (tmp / "f.svg").write_text("<svg/>")
    assert [p.name for p in (out / "figures").iterdir()] == ["f.svg"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["results"]  # no temp, no .old


def test_an_empty_folder_may_be_overwritten(tmp_path):
    out = tmp_path / "empty"
    out.mkdir()
    with pytest.raises(FileExistsError, match="--overwrite"):
        check_output_dir(out)
    with atomic_directory(out, overwrite=True) as tmp:
        (tmp / "a.csv").write_text("a\n")
    assert (out / "a.csv").is_file()


def test_identical_runs_give_identical_markers(tmp_path):
    for name in ("a", "b"):
        with atomic_directory(tmp_path / name, run_id="abc123") as tmp:
            (tmp / "x.csv").write_text("1\n")
    assert (tmp_path / "a" / MARKER).read_bytes() == (tmp_path / "b" / MARKER).read_bytes()
    assert b'"run_id": "abc123"' in (tmp_path / "a" / MARKER).read_bytes()


def test_symlink_and_empty_out_are_refused(tmp_path):
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "link").symlink_to(real)
    with pytest.raises(OutputPathError, match="is a symbolic link"):
        check_output_dir(tmp_path / "link", overwrite=True)
    with pytest.raises(OutputPathError, match="--out is empty"):
        check_output_dir("")


def test_report_out_over_results_json_is_refused(tmp_path):
    run = tmp_path / "run"
    with atomic_directory(run) as tmp:
        write_json(tmp / "results.json", {"provenance": {}})
    before = _snapshot(tmp_path)
    with pytest.raises(OutputPathError) as e:
        check_output_file(run / "results.json", inputs={"results": run / "results.json"})
    assert "is the results" in _one_line(str(e.value)) and "results.json" in str(e.value)
    # a hard link to the input is the same file
    os.link(run / "results.json", tmp_path / "alias.json")
    with pytest.raises(OutputPathError, match="is the results"):
        check_output_file(tmp_path / "alias.json", inputs={"results": run / "results.json"})
    (tmp_path / "alias.json").unlink()
    with pytest.raises(OutputPathError, match="is a folder"):
        check_output_file(run, inputs={"results": run / "results.json"})
    # probe finding: a page written inside the audit folder was later called a file of the
    # user's (the folder's manifest does not list it); beside it is the place
    with pytest.raises(OutputPathError, match="is inside .* a folder medaudit wrote"):
        check_output_file(run / "page.html", inputs={"results": run / "results.json"})
    with pytest.raises(OutputPathError, match="is inside .* a folder medaudit wrote"):
        check_output_file(run / "sub" / "page.html")
    assert check_output_file(tmp_path / "page.html", inputs={"results": run / "results.json"})
    assert _snapshot(tmp_path) == before


def test_out_under_a_regular_file_is_refused_before_anything(tmp_path):
    (tmp_path / "precious.txt").write_text("x\n")
    before = _snapshot(tmp_path)
    for target in (tmp_path / "precious.txt" / "out", tmp_path / "precious.txt" / "a" / "b"):
        with pytest.raises(OutputPathError) as e:
            check_output_dir(target)
        assert f"{str(tmp_path / 'precious.txt')!r} is a file, not a folder" in _one_line(str(e.value))
        with pytest.raises(OutputPathError):
            check_output_file(target)
    assert _snapshot(tmp_path) == before


def test_out_in_a_read_only_folder_is_refused_before_anything():
    """A real permission failure: as root chmod does not bind, so the check runs as nobody."""
    base = Path(tempfile.mkdtemp(prefix="medaudit-ro-", dir="/tmp"))
    try:
        base.chmod(0o755)
        ro = base / "ro"
        ro.mkdir(mode=0o555)
        ro.chmod(0o555)
        code = ("import sys\nfrom medaudit.io.output import check_output_dir\n"
                "try:\n    check_output_dir(sys.argv[1])\n"
                "except Exception as e:\n    print(type(e).__name__ + ': ' + str(e))\n")
        cmd = [sys.executable, "-c", code, str(ro / "out")]
        if os.geteuid() == 0:
            if shutil.which("setpriv") is None:
                pytest.skip("running as root without setpriv: no way to drop the privilege")
            cmd = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", *cmd]
        res = subprocess.run(cmd, capture_output=True, text=True, timeout=60,
                             env={**os.environ, "PYTHONPATH": str(SRC)}, cwd="/tmp")
        line = res.stdout.strip()
        assert line.startswith("OutputPathError: ") and "not writable" in line, res
        assert str(ro) in line and "\n" not in line
        assert list(ro.iterdir()) == []
    finally:
        shutil.rmtree(base, ignore_errors=True)


_CHILD = """
import sys, time
from medaudit.io.output import atomic_directory
with atomic_directory(sys.argv[1]) as tmp:
    (tmp / "half.csv").write_text("x")
    print("ready", flush=True)
    time.sleep(120)
"""


def _start_child(out: Path) -> subprocess.Popen:
    p = subprocess.Popen([sys.executable, "-c", _CHILD, str(out)], stdout=subprocess.PIPE,
                         text=True, env={**os.environ, "PYTHONPATH": str(SRC)})
    assert p.stdout.readline().strip() == "ready"
    return p


def test_stale_temp_of_a_killed_run_is_removed(tmp_path):
    out = tmp_path / "out"
    child = _start_child(out)
    os.kill(child.pid, signal.SIGKILL)  # kill -9 in the write phase
    child.wait(timeout=30)
    child.stdout.close()
    stale = [p for p in tmp_path.iterdir() if p.name.startswith(".out.tmp-")]
    assert len(stale) == 1 and (stale[0] / MARKER).is_file()
    # a live run's temporary folder and a folder that merely looks like one are left alone
    live = _start_child(out)
    try:
        foreign = tmp_path / ".out.tmp-1-deadbeef"
        foreign.mkdir()  # no marker: not medaudit's
        with atomic_directory(out) as tmp:
            (tmp / "done.csv").write_text("ok\n")
        names = {p.name for p in tmp_path.iterdir()}
        assert stale[0].name not in names  # removed by the rerun
        assert foreign.name in names
        assert len([n for n in names if n.startswith(f".out.tmp-{live.pid}-")]) == 1
        assert sorted(p.name for p in out.iterdir()) == [MARKER, "done.csv"]
    finally:
        os.kill(live.pid, signal.SIGKILL)
        live.wait(timeout=30)
        live.stdout.close()
    assert len(remove_stale_temps(out)) == 1  # now dead: the next run's cleanup takes it


def test_stale_old_folder_of_a_killed_swap_is_removed(tmp_path):
    out = tmp_path / "out"
    with atomic_directory(out) as tmp:
        (tmp / "a.csv").write_text("a\n")
    old = tmp_path / f".out.old-{os.getpid()}-0123abcd"
    shutil.copytree(out, old)  # what a kill between the two renames leaves
    assert remove_stale_temps(out) == [old]
    assert not old.exists() and (out / "a.csv").is_file()


def test_disk_full_names_the_path_and_keeps_the_old_output(tmp_path):
    out = tmp_path / "out"
    with atomic_directory(out) as tmp:
        (tmp / "metrics.csv").write_text("previous\n")
    before = _snapshot(tmp_path)
    with pytest.raises(OutputPathError) as e, atomic_directory(out, overwrite=True) as tmp:
        (tmp / "metrics.csv").write_text("partial")
        with open("/dev/full", "wb") as fh:  # a device that is always full: a real ENOSPC
            fh.write(b"x" * 65536)
            fh.flush()
    msg = _one_line(str(e.value))
    assert "no space left" in msg and str(out) in msg
    assert _snapshot(tmp_path) == before  # the partial output was removed


def _writes_fail(monkeypatch, code: int, text: str) -> None:
    """Every file opened by os.fdopen (atomic_write_bytes) fails to write with ``code``."""
    real_fdopen = os.fdopen

    class _Fails:
        def __init__(self, fh):
            self.fh = fh

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.fh.close()

        def write(self, data):
            raise OSError(code, text)

    monkeypatch.setattr(os, "fdopen", lambda fd, mode: _Fails(real_fdopen(fd, mode)))


def test_disk_full_in_a_single_file_write_names_the_file(tmp_path, monkeypatch):
    target = tmp_path / "results.json"
    _writes_fail(monkeypatch, errno.ENOSPC, "No space left on device")
    with pytest.raises(OutputPathError) as e:
        atomic_write_bytes(target, b"{}")
    assert str(target) in _one_line(str(e.value)) and "no space left" in str(e.value)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("code, text", [(errno.EFBIG, "File too large"),
                                        (errno.EIO, "Input/output error")])
def test_other_write_errors_name_the_file(tmp_path, monkeypatch, code, text):
    """Probe finding: a file over the size limit (ulimit -f) ended the audit with the bare
    "[Errno 27] File too large", naming nothing; every write error names its file."""
    target = tmp_path / "results.json"
    _writes_fail(monkeypatch, code, text)
    with pytest.raises(OutputPathError) as e:
        atomic_write_bytes(target, b"{}")
    assert _one_line(str(e.value)) == f"could not write {str(target)!r} ({text})."
    assert list(tmp_path.iterdir()) == []
    # inside an output folder: the file named where it would have been, and nothing left
    monkeypatch.undo()
    out = tmp_path / "out"
    with pytest.raises(OutputPathError) as e:
        with atomic_directory(out) as tmp:
            raise OSError(errno.EFBIG, "File too large", str(tmp / "tables" / "t.csv"))
    assert str(e.value) == (f"could not write {str(out / 'tables' / 't.csv')!r} of --out "
                            f"{str(out)!r} (File too large); nothing was written.")
    assert list(tmp_path.iterdir()) == []


def test_a_real_file_size_limit_is_named(tmp_path):
    """The same with a real limit (RLIMIT_FSIZE, as `ulimit -f`), in a child process."""
    import subprocess
    import sys

    code = (
        "import resource, signal, sys\n"
        "signal.signal(signal.SIGXFSZ, signal.SIG_IGN)\n"
        "resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))\n"
        "from medaudit.io.output import atomic_directory, OutputPathError\n"
        "try:\n"
        "    with atomic_directory(sys.argv[1]) as tmp:\n"
        "        (tmp / 'big.bin').write_bytes(b'x' * 100000)\n"
        "except OutputPathError as exc:\n"
        "    print(exc)\n"
    )
    out = tmp_path / "out"
    done = subprocess.run([sys.executable, "-c", code, str(out)], capture_output=True, text=True,
                          timeout=120)
    assert done.stdout.strip() in (
        f"could not write --out {str(out)!r} (File too large); nothing was written.",
        f"could not write {str(out / 'big.bin')!r} of --out {str(out)!r} (File too large); "
        "nothing was written."), done.stdout + done.stderr
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("mask", [0o022, 0o077, 0o002])
def test_outputs_follow_the_umask(tmp_path, mask):
    old = os.umask(mask)
    try:
        out = tmp_path / "out"
        with atomic_directory(out) as tmp:
            write_json(tmp / "results.json", {"a": 1})
            write_csv(pd.DataFrame({"a": [1.5]}), tmp / "t.csv")
            (tmp / "plain.md").write_text("x")
    finally:
        os.umask(old)
    assert stat.S_IMODE(out.stat().st_mode) == 0o777 & ~mask
    for name in ("results.json", "t.csv", "plain.md", MARKER):
        assert stat.S_IMODE((out / name).stat().st_mode) == 0o666 & ~mask, name


def test_manifest_files_follow_the_umask(tmp_path):
    from medaudit.datasets.manifests import montgomery_manifest, write_manifest

    (tmp_path / "root" / "CXR_png").mkdir(parents=True)
    for name in ("MCUCXR_0001_1.png", "MCUCXR_0002_0.png"):
        (tmp_path / "root" / "CXR_png" / name).write_bytes(b"png")
    old = os.umask(0o022)
    try:
        write_manifest(montgomery_manifest(tmp_path / "root", expect_counts=False), tmp_path / "m.csv")
    finally:
        os.umask(old)
    for name in ("m.csv", "m.json"):  # mkstemp alone made them 0600
        assert stat.S_IMODE((tmp_path / name).stat().st_mode) == 0o644, name


def test_failed_run_writes_nothing_and_keeps_the_old_output(tmp_path):
    out = tmp_path / "out"
    with atomic_directory(out) as tmp:
        (tmp / "a.csv").write_text("a\n")
    before = _snapshot(tmp_path)
    with pytest.raises(KeyboardInterrupt), atomic_directory(out, overwrite=True) as tmp:
        (tmp / "half.csv").write_text("x")
        raise KeyboardInterrupt
    assert _snapshot(tmp_path) == before


# ============================================================ 2. the YAML loader

def _file(tmp_path: Path, text: str | bytes, name: str = "spec.yaml") -> Path:
    p = tmp_path / name
    p.write_bytes(text if isinstance(text, bytes) else text.encode("utf-8"))
    return p


def test_duplicate_key_names_key_and_both_lines(tmp_path):
    p = _file(tmp_path, "name: x\nn_resamples: 10\nprompts:\n  families: [a]\nn_resamples: 5000\n")
    with pytest.raises(YAMLFileError) as e:
        load_yaml(p, what="audit spec")
    assert _one_line(str(e.value)).startswith(f"{p}:5:1: duplicate key 'n_resamples' (first at line 2)")
    nested = _file(tmp_path, "a:\n  - b:\n      c: 1\n      d: 2\n      c: 3\n", "n.yaml")
    with pytest.raises(YAMLFileError, match=r"n\.yaml:5:7: duplicate key 'c' \(first at line 3\)"):
        load_yaml(nested)


def test_merge_keys_are_not_duplicates():
    assert load_yaml_text("b: &b {x: 1, y: 2}\nc:\n  <<: *b\n  x: 3\n")["c"] == {"x": 3, "y": 2}


def _bomb(levels: int = 9, width: int = 9) -> str:
    lines = ["a0: &a0 [" + ", ".join(["lol"] * width) + "]"]
    lines += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * width) + "]" for i in range(1, levels + 1)]
    # the bomb inside a dataset option, as the issue found it (anchors come before their use)
    return "\n".join(lines) + f"\nannotations:\n  format: nih\n  dataset:\n    findings: *a{levels}\n"


def test_alias_bomb_is_refused_at_once(tmp_path):
    p = _file(tmp_path, _bomb())
    t0 = time.perf_counter()
    with pytest.raises(YAMLFileError) as e:
        load_yaml(p)
    assert time.perf_counter() - t0 < HANG
    msg = _one_line(str(e.value))
    assert msg.startswith(f"{p}:1:5: aliases would expand this file by ") and "alias bomb" in msg
    assert len(msg) < 300
    assert yaml.safe_load(p.read_text())["annotations"]["dataset"]["findings"]  # it is valid YAML


def test_many_aliases_are_refused_and_few_are_read():
    few = "x: &x [1, 2]\n" + "".join(f"k{i}: *x\n" for i in range(5))
    assert load_yaml_text(few)["k4"] == [1, 2]
    many = "x: &x 1\n" + "".join(f"k{i}: *x\n" for i in range(MAX_ALIASES + 1))
    with pytest.raises(YAMLFileError, match=f"more than {MAX_ALIASES} alias uses"):
        load_yaml_text(many, source="s.yaml")


def test_recursive_alias_is_refused():
    with pytest.raises(YAMLFileError, match=r"s\.yaml:1:4: an alias refers to a value that contains it"):
        load_yaml_text("a: &x [1, *x]\n", source="s.yaml")


def test_ten_megabyte_scalar_is_refused_at_once(tmp_path):
    p = _file(tmp_path, b"name: " + b"x" * 10_000_000 + b"\n")
    t0 = time.perf_counter()
    with pytest.raises(YAMLFileError) as e:
        load_yaml(p, what="audit spec")
    assert time.perf_counter() - t0 < HANG
    assert "10,000,007 bytes" in _one_line(str(e.value)) and str(p) in str(e.value)
    long = _file(tmp_path, "name: " + "y" * 70_000 + "\n", "long.yaml")
    with pytest.raises(YAMLFileError) as e:
        load_yaml(long)
    assert f"{long}:1:7: a value of 70,000 characters" in _one_line(str(e.value))
    assert len(str(e.value)) < 300


def test_non_utf8_byte_names_file_offset_line_and_column(tmp_path):
    p = _file(tmp_path, b"name: ok\ncohorts: [caf\xe9]\n")
    with pytest.raises(YAMLFileError) as e:
        load_yaml(p)
    assert _one_line(str(e.value)) == (f"{p}:2:14: not UTF-8 text: byte 0xe9 at byte offset 22 "
                                       "cannot be decoded; save the file as UTF-8.")
    assert load_yaml(_file(tmp_path, "\ufeffname: bom\n", "bom.yaml")) == {"name": "bom"}


def test_tags_are_refused_and_never_executed(tmp_path):
    flag = tmp_path / "pwned"
    p = _file(tmp_path, f"name: !!python/object/apply:os.system ['touch {flag}']\n")
    with pytest.raises(YAMLFileError) as e:
        load_yaml(p)
    assert _one_line(str(e.value)).startswith(f"{p}:1:7: tag '!!python/object/apply:os.system' "
                                              "is not allowed")
    assert not flag.exists()
    for text in ("a: !custom x\n", "a: !!binary aGk=\n", "a: !!set {x: null}\n"):
        with pytest.raises(YAMLFileError, match="is not allowed"):
            load_yaml_text(text)


@pytest.mark.parametrize("text, where, what", [
    ("a: b: c\n", "1:5", "mapping values are not allowed here"),
    ("a: [1, 2\nb: 3\n", "2:2", "expected ',' or ']'"),
    ("a:\n\t- x\n", "2:1", "cannot start any token"),
    ("a: 1\nb: \x01\n", "2:4", "U+0001 is not allowed"),
    ("a: 1\n---\nb: 2\n", "2:1", "expected a single document"),
    ("- a\n- b\n", "1:1", "must be a YAML mapping"),
])
def test_parser_errors_are_one_labelled_line_naming_the_file(tmp_path, text, where, what):
    p = _file(tmp_path, text)
    with pytest.raises(YAMLFileError) as e:
        load_yaml(p)
    msg = _one_line(str(e.value))
    assert msg.startswith(f"{p}:{where}: ") and what in msg
    assert "<unicode string>" not in msg


def test_empty_folder_fifo_and_symlink_loop_specs(tmp_path):
    with pytest.raises(YAMLFileError, match="is empty"):
        load_yaml(_file(tmp_path, ""))
    with pytest.raises(SchemaError, match="is a folder, not a YAML file"):
        load_yaml(tmp_path)
    os.mkfifo(tmp_path / "fifo.yaml")  # opening it would block forever
    with pytest.raises(SchemaError, match="not a regular file"):
        load_yaml(tmp_path / "fifo.yaml")
    (tmp_path / "loop.yaml").symlink_to(tmp_path / "loop.yaml")
    with pytest.raises(SchemaError) as e:
        load_yaml(tmp_path / "loop.yaml", what="audit spec")
    assert "symbolic link loop" in _one_line(str(e.value)) and "loop.yaml" in str(e.value)
    with pytest.raises(FileNotFoundError, match="does not exist"):
        load_yaml(tmp_path / "absent.yaml")


def test_symlink_loop_as_score_table_is_one_line(tmp_path):
    (tmp_path / "scores.csv").symlink_to(tmp_path / "scores.csv")
    with pytest.raises(SchemaError) as e:
        read_table(tmp_path / "scores.csv")
    assert "symbolic link loop" in _one_line(str(e.value))


def test_deep_nesting_is_refused(tmp_path):
    for depth in (70, 50_000):
        p = _file(tmp_path, "a: " + "[" * depth + "]" * depth + "\n")
        with pytest.raises(YAMLFileError, match="nested"):
            load_yaml(p)


def test_dates_stay_text_and_examples_read_as_safe_load():
    assert load_yaml_text("d: 2024-13-45\ne: 2024-01-01\n") == {"d": "2024-13-45", "e": "2024-01-01"}
    for p in sorted((ROOT / "examples").glob("*.yaml")):  # witness: PyYAML's own safe_load
        assert load_yaml(p) == yaml.safe_load(p.read_text(encoding="utf-8")), p.name


def test_quoted_values_are_bounded():
    huge = "x" * 10_000_000
    t0 = time.perf_counter()
    q = quote(huge)
    assert len(q) < 200 and "10,000,000 characters" in q
    # an alias-bomb-shaped value (shared references nine deep) is not expanded by a message
    v: list = ["lol"] * 9
    for _ in range(9):
        v = [v] * 9
    assert len(quote(v)) < 250
    assert len(shorten(huge, limit=100)) < 150
    assert time.perf_counter() - t0 < HANG
    assert quote(np.float64(0.5)) == "0.5" and quote(np.int64(3)) == "3"


def test_ten_megabyte_cell_does_not_become_a_ten_megabyte_message():
    t = pd.DataFrame(simulate_cohort(n_pos=5, n_healthy=5, n_sick=0, rng=1))
    t["score"] = t["score"].astype(object)
    t.loc[3, "score"] = "9" * 10_000_000 + "x"
    with pytest.raises(SchemaError) as e:
        validate_score_table(t, source="big.csv")
    assert len(str(e.value)) < 500 and "row 4" in _one_line(str(e.value))


# ============================================================ 3. limits

def test_seed_rule():
    for bad in (-3, -1, 2**32, True, 2.5, "7", None, float("nan")):
        with pytest.raises(MedauditError) as e:
            limits.validate_seed(bad)
        assert "seed must be a whole number from 0 to 4294967295" in _one_line(str(e.value))
    assert limits.validate_seed(0) == 0 and limits.validate_seed(2**32 - 1) == 2**32 - 1
    assert limits.validate_seed(np.int64(5)) == 5 and limits.validate_seed(7.0) == 7


@given(st.integers(-(2**70), 2**70))
def test_every_accepted_seed_seeds_numpy(seed):
    try:
        s = limits.validate_seed(seed)
    except MedauditError:
        assert not 0 <= seed < 2**32
        return
    np.random.default_rng(np.random.SeedSequence([s, 1, 2]))  # witness: NumPy accepts it
    np.random.RandomState(s)  # and the legacy 32-bit seeding path too  # noqa: NPY002


def test_same_minimum_b_as_the_spec():
    from medaudit.audit.spec import AuditSpec

    base = {"name": "t", "simulate": "paper000", "cohorts": {"c": {}}}
    for key, low in (("n_resamples", limits.MIN_N_RESAMPLES),
                     ("n_permutations", limits.MIN_N_PERMUTATIONS)):
        assert getattr(AuditSpec.model_validate({**base, key: low}), key) == low
        with pytest.raises(ValueError, match=f"{key} must be a whole number of at least {low}"):
            AuditSpec.model_validate({**base, key: low - 1})
    with pytest.raises(MedauditError, match="^n_resamples must be a whole number of at least 10; got 1"):
        limits.validate_n_resamples(1)  # `summarize --n-resamples 1`


def test_n_permutations_zero_blames_n_permutations():
    with pytest.raises(MedauditError) as e:
        limits.validate_n_permutations(0)
    assert _one_line(str(e.value)).startswith("n_permutations must be")
    assert "n_resamples" not in str(e.value)


def test_a_billion_resamples_is_refused_with_the_estimate():
    with pytest.raises(MedauditError) as e:
        limits.validate_n_resamples(1_000_000_000)
    assert "above the maximum of 100,000" in _one_line(str(e.value)) and "--allow-large" in str(e.value)
    assert limits.validate_n_resamples(1_000_000_000, allow_large=True) == 1_000_000_000
    with pytest.raises(MedauditError) as e:
        limits.check_resampling_budget(300, 1_000_000_000)
    msg = _one_line(str(e.value))
    # hand-worked: 8 B x 1e9 replicates + 4 work arrays of 2**18 doubles = 8.008 GB;
    # 300 x 1e9 x 50 ns = 15,000 s = 4.2 h
    assert "about 8.0 GB of memory and 4.2 h" in msg and "--allow-large" in msg
    cost = limits.check_resampling_budget(300, 1_000_000_000, allow_large=True)
    assert (cost.seconds, cost.bytes) == (15_000, 8e9 + 4 * 8 * 2**18)
    # a large cohort makes a count under the maximum too slow as well
    with pytest.raises(MedauditError, match="would need"):
        limits.check_resampling_budget(10_000_000, 100_000, name="n_permutations")
    assert limits.check_resampling_budget(300, 2000).bytes < 100e6


def test_cost_model_batch_matches_the_engine():
    from medaudit.stats import designs

    assert limits._WORK_ELEMENTS == designs._BATCH_ELEMENTS


def test_pydantic_validators_for_spec_fields():
    from pydantic import BaseModel, ValidationError, model_validator

    class Spec(BaseModel):
        seed: limits.Seed = 2026
        n_resamples: limits.NResamples = 2000
        n_permutations: limits.NPermutations = 10_000
        allow_large: bool = False
        _limits = model_validator(mode="after")(limits.check_spec_limits)

    assert Spec(seed=3).seed == 3
    for bad, word in (({"seed": -3}, "seed must be"), ({"n_resamples": 1}, "at least 10"),
                      ({"n_resamples": 10**9}, "maximum of 100,000"),
                      ({"n_permutations": 0}, "n_permutations must")):
        with pytest.raises(ValidationError, match=word):
            Spec(**bad)
    assert Spec(n_resamples=10**9, allow_large=True).n_resamples == 10**9


# ============================================================ 4. columns and ids

def test_ids_are_text_in_csv(tmp_path):
    p = tmp_path / "scores.csv"
    p.write_text("image_id,cohort,model,prompt,score,label,patient_id\n"
                 "007,c,m,p,0.9,1,001\n7,c,m,p,0.1,0,002\n001,c,m,p,0.4,0,003\n")
    t = read_table(p)
    assert t["image_id"].tolist() == ["007", "7", "001"]
    assert t["patient_id"].tolist() == ["001", "002", "003"]
    v = validate_score_table(t, source=str(p))  # 007 and 7 are two images, not a duplicate
    assert sorted(v["image_id"]) == ["001", "007", "7"]
    assert v["score"].dtype == float


def test_ids_are_text_in_parquet(tmp_path):
    p = tmp_path / "scores.parquet"
    pd.DataFrame({"image_id": ["007", "7"], "item_id": [1, 2], "study_id": [3.0, np.nan],
                  "score": [0.5, 0.25]}).to_parquet(p)
    t = read_table(p)
    assert t["image_id"].tolist() == ["007", "7"]
    assert t["item_id"].tolist() == ["1", "2"]
    assert t["study_id"].iloc[0] == "3" and pd.isna(t["study_id"].iloc[1])
    assert t["score"].tolist() == [0.5, 0.25]
    assert set(ID_COLUMNS) == {"image_id", "study_id", "patient_id", "item_id"}


@given(st.lists(st.from_regex(r"[0-9]{1,4}", fullmatch=True), min_size=1, max_size=20, unique=True))
def test_id_text_round_trips_through_csv(ids):
    with tempfile.TemporaryDirectory() as d:
        p = Path(d, "t.csv")
        pd.DataFrame({"image_id": ids, "score": np.linspace(0, 1, len(ids))}).to_csv(p, index=False)
        assert read_table(p)["image_id"].tolist() == ids


def test_wide_file_id_column_is_text(tmp_path):
    from medaudit.audit.spec import WideScoresSpec

    p = tmp_path / "wide.csv"
    p.write_text("stem,label,s1_clip\n001,1,0.9\n1,0,0.2\n")
    w = WideScoresSpec.model_validate({"path": "wide.csv", "cohort": "c", "id_column": "stem",
                                       "label_column": "label",
                                       "column_pattern": r"s(?P<seed>\d)_(?P<model>\w+)"})
    long = read_wide(p, w)
    assert long["image_id"].tolist() == ["001", "1"]


def test_ids_as_text_keeps_missing_cells():
    t = ids_as_text(pd.DataFrame({"image_id": ["a", None], "patient_id": [1.0, np.nan]}))
    assert t["image_id"].iloc[0] == "a" and pd.isna(t["image_id"].iloc[1])
    assert t["patient_id"].iloc[0] == "1" and pd.isna(t["patient_id"].iloc[1])


@pytest.mark.parametrize("typo, meant", [("label_sfot", "label_soft"), ("Label_Soft", "label_soft"),
                                         ("negative_grup", "negative_group"),
                                         ("patient", "patient_id")])
def test_misspelt_optional_column_is_an_error(tmp_path, typo, meant):
    t = pd.DataFrame(simulate_cohort(n_pos=5, n_healthy=5, n_sick=0, rng=1))
    t = t.drop(columns=[c for c in ("negative_group",) if meant == "negative_group"])
    t[typo] = "x" if meant != "label_soft" else 0.5
    with pytest.raises(SchemaError) as e:
        validate_score_table(t, source="scores.csv")
    msg = _one_line(str(e.value))
    assert msg.startswith(f"scores.csv: column {typo!r}") and f"did you mean {meant!r}?" in msg


def test_unknown_columns_are_listed_for_provenance():
    t = pd.DataFrame(columns=[*SCORE_COLUMNS, "sex", "scanner", "label_soft"])
    assert unknown_columns(t) == ["sex", "scanner"]
    # the optional column itself present: a similar extra name is no longer a typo of it
    t = pd.DataFrame(columns=[*SCORE_COLUMNS, "label_soft", "label_sfot"])
    assert unknown_columns(t) == ["label_sfot"]


def test_misspelt_required_column_gets_a_hint():
    t = pd.DataFrame(simulate_cohort(n_pos=5, n_healthy=5, n_sick=0, rng=1)).rename(
        columns={"label": "lable"})
    with pytest.raises(SchemaError) as e:
        validate_score_table(t, source="s.csv")
    assert "missing column(s) ['label']; did you mean 'lable' -> 'label'?" in _one_line(str(e.value))


# ============================================================ 5. messages

def test_overlap_names_the_image_that_could_not_be_hashed(tmp_path):
    pytest.importorskip("imagehash")
    from PIL import Image

    from medaudit.imaging.overlap import screen_overlap

    good = tmp_path / "good.png"
    Image.fromarray(np.arange(64 * 64, dtype=np.uint8).reshape(64, 64)).save(good)
    bad = tmp_path / "broken.png"
    bad.write_bytes(b"not a png")
    man = pd.DataFrame({"dataset": ["a", "b"], "image_id": ["g1", "b7"],
                        "path": [str(good), str(bad)]})
    msg = screen_overlap(man).unhashed_message()
    assert _one_line(msg).startswith("1 image(s) could not be hashed: b/b7 (")
    assert str(bad) in msg and "overlap.json" not in msg


def test_manifest_of_an_empty_folder_names_it(tmp_path, capsys):
    (tmp_path / "EMPTYDIR").mkdir()
    rc, line = _cli(["manifest", "montgomery", tmp_path / "EMPTYDIR", "--out", tmp_path / "m.csv"],
                    capsys)
    assert rc == 2 and str(tmp_path / "EMPTYDIR") in line and "MCUCXR" in line
    assert not (tmp_path / "m.csv").exists()


def test_csv_floats_round_trip_and_read_as_people_expect(tmp_path):
    t = pd.DataFrame({"model": ["m"] * 6, "estimate": [0.95, 1 / 3, 1e-20, math.nan, math.inf, -0.0],
                      "n": [1, 2, 3, 4, 5, 6]})
    write_csv(t, tmp_path / "t.csv")
    text = (tmp_path / "t.csv").read_text()
    assert "0.95," in text and "0.94999999999999996" not in text
    assert ",inf," in text and "m,,4" in text  # NaN is an empty cell, infinity 'inf' (as before)
    back = pd.read_csv(tmp_path / "t.csv")
    assert back["estimate"].iloc[:3].tolist() == [0.95, 1 / 3, 1e-20]
    assert math.isnan(back["estimate"].iloc[3]) and back["estimate"].iloc[4] == math.inf


@given(st.lists(st.floats(allow_nan=False, allow_infinity=False, width=64), min_size=1, max_size=30))
def test_csv_floats_are_bit_identical_after_reading(values):
    with tempfile.TemporaryDirectory() as d:
        p = Path(d, "t.csv")
        write_csv(pd.DataFrame({"x": values}), p)
        lines = p.read_text().splitlines()
        assert lines[0] == "x" and lines[1:] == [repr(float(v)) for v in values]
        # witness: Python's correctly rounded float() reads every cell back bit for bit
        back = np.array([float(x) for x in lines[1:]])
        assert np.array_equal(back, np.asarray(values, dtype=float))
        assert np.array_equal(np.signbit(back), np.signbit(np.asarray(values, dtype=float)))


def test_csv_name_cells_are_not_evaluated_by_spreadsheets(tmp_path):
    t = pd.DataFrame({"model": ["=HYPERLINK(\"http://x\")", "+1+1", "-2+3", "@SUM(A1)", "\tx",
                                "-0.5", "-", "plain"],
                      "estimate": [-0.5, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0]})
    write_csv(t, tmp_path / "t.csv")
    back = pd.read_csv(tmp_path / "t.csv", keep_default_na=False)
    assert back["model"].tolist() == ["'=HYPERLINK(\"http://x\")", "'+1+1", "'-2+3", "'@SUM(A1)",
                                      "'\tx", "-0.5", "-", "plain"]
    assert back["estimate"].tolist() == t["estimate"].tolist()  # numbers are untouched
    assert not any(line.startswith(("=", "+", "@")) for line in (tmp_path / "t.csv").read_text().splitlines())


# ============================================================ 6. CI

@pytest.mark.parametrize("update_rc, install_rc, message", [
    (100, 0, "CI: error: 'apt-get update' failed"),
    (0, 100, "CI: error: 'apt-get install chromium' failed"),
    (0, 0, "CI: error: the chromium package installed but no chromium binary is on PATH"),
])
def test_ci_fails_loudly_when_chromium_cannot_be_installed(tmp_path, update_rc, install_rc, message):
    """``.ci/run`` with stub ``apt-get``/``make`` and no Chromium on PATH (e.g. dpkg lock held)."""
    stubs = tmp_path / "bin"
    stubs.mkdir()
    (stubs / "dirname").symlink_to(shutil.which("dirname"))
    log = tmp_path / "calls.log"
    (stubs / "apt-get").write_text(
        f'#!/bin/sh\necho "apt-get $*" >> {log}\n'
        f'case " $* " in *" update "*) exit {update_rc};; *) exit {install_rc};; esac\n')
    (stubs / "make").write_text(f"#!/bin/sh\necho make >> {log}\nexit 0\n")
    for s in ("apt-get", "make"):
        (stubs / s).chmod(0o755)
    res = subprocess.run(["/bin/bash", str(ROOT / ".ci" / "run")], capture_output=True, text=True,
                         env={"PATH": str(stubs)}, timeout=60)
    assert res.returncode == 1 and message in res.stderr
    calls = log.read_text().splitlines()
    assert all("-o DPkg::Lock::Timeout=600" in c for c in calls if c.startswith("apt-get"))
    assert "make" not in calls  # the suite never ran without its browser test


def test_ci_runs_make_test_when_chromium_is_present(tmp_path):
    stubs = tmp_path / "bin"
    stubs.mkdir()
    (stubs / "dirname").symlink_to(shutil.which("dirname"))
    log = tmp_path / "calls.log"
    (stubs / "chromium").write_text("#!/bin/sh\nexit 0\n")
    (stubs / "make").write_text(f'#!/bin/sh\necho "make $*" >> {log}\nexit 0\n')
    for s in ("chromium", "make"):
        (stubs / s).chmod(0o755)
    res = subprocess.run(["/bin/bash", str(ROOT / ".ci" / "run")], capture_output=True, text=True,
                         env={"PATH": str(stubs)}, timeout=60)
    assert res.returncode == 0, res.stderr
    assert log.read_text().splitlines() == ["make test"]


@pytest.mark.parametrize("key,read_as", [("no", "False"), ("off", "False"), ("null", "None"),
                                         ("007", "7"), ("1_000", "1000"), ("0x10", "16")])
def test_an_unquoted_key_that_yaml_changes_is_refused_with_its_line(key, read_as):
    """YAML 1.1 turns these keys into another value; the user's text would be lost and the
    validation error would name a key that is not in the file (probe: cohorts.0.[key])."""
    from medaudit.io.yaml import YAMLFileError, load_yaml_text

    text = f"n_resamples: 50\ncohorts:\n  site1: {{}}\n  {key}: {{}}\n"
    with pytest.raises(YAMLFileError) as e:
        load_yaml_text(text, source="s.yaml")
    msg = str(e.value)
    assert msg.startswith("s.yaml:4:3:") and f"read by YAML as {read_as}" in msg
    assert f"quote it ('{key}': ...)" in msg
    # quoted, or a key whose text is its value, reads as before
    assert load_yaml_text(text.replace(f"  {key}:", f"  '{key}':"), source="s.yaml")[
        "cohorts"] == {"site1": {}, key: {}}
    assert load_yaml_text("grid:\n  7: a\n  0.5: b\n", source="s.yaml") == {"grid": {7: "a", 0.5: "b"}}


def test_a_text_field_given_no_or_null_says_how_yaml_read_it(tmp_path, capsys):
    spec = tmp_path / "s.yaml"
    spec.write_text("simulate: paper000\nname: no\n")
    assert main(["audit", str(spec), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip()
    assert "name: Input should be a valid string (YAML read the value as False" in err
    assert len(err.splitlines()) == 1


def test_a_misspelt_choice_gets_a_did_you_mean(tmp_path, capsys):
    spec = tmp_path / "s.yaml"
    spec.write_text("simulate: paper000\nblocks: [discrimnation]\n")
    assert main(["audit", str(spec), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip()
    assert "blocks.0: 'discrimnation' is not allowed; did you mean 'discrimination'?" in err


# ------------------------------------------------ the manifest in the marker (what medaudit wrote)
def test_marker_manifest_lists_files_and_folders(tmp_path):
    out = tmp_path / "results"
    with atomic_directory(out, run_id="r1") as tmp:
        (tmp / "a.csv").write_text("a\n")
        (tmp / "figures").mkdir()
        (tmp / "figures" / "f.svg").write_text("<svg/>")
        (tmp / "empty").mkdir()
    marker = json.loads((out / MARKER).read_text())
    assert marker["folders"] == ["empty", "figures"]
    assert marker["files"] == {
        "a.csv": {"bytes": 2, "sha256": hashlib.sha256(b"a\n").hexdigest()},
        "figures/f.svg": {"bytes": 6, "sha256": hashlib.sha256(b"<svg/>").hexdigest()}}
    assert foreign_files(out) == [] and changed_files(out) == []
    assert (out / "a.csv").read_text() == "a\n"  # the manifest changes no other file


def test_overwrite_refuses_foreign_files_in_a_marked_folder(tmp_path):
    out = tmp_path / "results"
    with atomic_directory(out) as tmp:
        (tmp / "tables").mkdir()
        (tmp / "tables" / "t.csv").write_text("t\n")
    (out / "mynotes.txt").write_text("mine\n")
    (out / "tables" / "extra").mkdir()
    (out / "tables" / "extra" / "f").write_text("mine\n")
    assert foreign_files(out) == ["mynotes.txt", "tables/extra/"]
    before = _snapshot(tmp_path)
    with pytest.raises(OutputPathError) as e:
        check_output_dir(out, overwrite=True)
    msg = _one_line(str(e.value))
    assert "mynotes.txt" in msg and "tables/extra/" in msg and "another --out" in msg
    with pytest.raises(OutputPathError), atomic_directory(out, overwrite=True):
        pytest.fail("the body must not run")
    assert _snapshot(tmp_path) == before


def test_a_marker_without_manifest_is_refused(tmp_path):
    out = tmp_path / "results"
    out.mkdir()
    (out / MARKER).write_text('{"medaudit_output": 1, "run_id": null, "tool": "medaudit", '
                              '"version": "0.1.0"}\n')
    (out / "summary.md").write_text("x")
    (out / "figures").mkdir()
    (out / "figures" / "f.png").write_bytes(b"png")
    before = _snapshot(tmp_path)
    assert foreign_files(out) is None and changed_files(out) is None
    with pytest.raises(OutputPathError, match="earlier medaudit") as e:
        check_output_dir(out, overwrite=True)
    assert "does not list the files" in _one_line(str(e.value))
    # nor a folder inside it (what `medaudit report DIR` replaces)
    with pytest.raises(OutputPathError, match="earlier medaudit"), \
            atomic_directory(out / "figures", overwrite=True, within_output=True):
        pytest.fail("the body must not run")
    assert _snapshot(tmp_path) == before


def test_changed_files_names_missing_altered_and_gone_folders(tmp_path):
    out = tmp_path / "results"
    with atomic_directory(out) as tmp:
        for name in ("a.csv", "b.csv", "c.csv"):
            (tmp / name).write_text(name)
        (tmp / "figures").mkdir()
        (tmp / "figures" / "f.png").write_bytes(b"png")
    (out / "a.csv").unlink()
    (out / "b.csv").write_text("b.cs!")  # same size, other bytes
    shutil.rmtree(out / "figures")
    assert changed_files(out) == ["a.csv", "b.csv", "figures/"]


def test_replacing_a_nested_folder_updates_the_manifest_above(tmp_path):
    out = tmp_path / "results"
    with atomic_directory(out) as tmp:
        (tmp / "figures").mkdir()
        (tmp / "figures" / "old.svg").write_text("<svg/>")
    (out / "figures" / "mine.png").write_bytes(b"mine")
    with pytest.raises(OutputPathError, match="mine.png"), \
            atomic_directory(out / "figures", overwrite=True, within_output=True):
        pytest.fail("the body must not run")
    (out / "figures" / "mine.png").unlink()
    with atomic_directory(out / "figures", overwrite=True, within_output=True) as tmp:
        (tmp / "new.svg").write_text("<svg></svg>")
    assert set(json.loads((out / MARKER).read_text())["files"]) == {"figures/new.svg"}
    assert changed_files(out) == [] and foreign_files(out) == []
    (out / "report.html").write_text("page")
    record_written(out, ["report.html"])
    assert set(json.loads((out / MARKER).read_text())["files"]) == {"figures/new.svg", "report.html"}


def test_a_missing_relative_input_says_where_it_was_looked_for(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "s.yaml").write_text("scores: nothere.csv\n")
    assert main(["audit", "s.yaml", "--out", "o"]) == 2
    err = capsys.readouterr().err
    assert "'nothere.csv' does not exist" in err
    assert f"(looked for {str(tmp_path / 'nothere.csv')!r})" in err


def test_unpaired_images_say_what_to_do():
    from medaudit.blocks.context import AuditContext, Study

    t = pd.DataFrame({"image_id": ["a", "b", "a"], "cohort": "c", "model": ["m1", "m1", "m2"],
                      "prompt": "p", "score": [0.1, 0.9, 0.2], "label": [0, 1, 0]})
    ctx = AuditContext(scores=t, study=Study(cohorts={"c": {}}, primary_prompt="p"))
    with pytest.raises(SchemaError, match=r"(?s)score the missing images, or leave the images "
                                          r"some model lacks out.*'m2'.*\['b'\]"):
        ctx.wide("c", keys=[("m1", "p"), ("m2", "p")])


@pytest.mark.parametrize("content, says", [
    (b"", "is empty (0 bytes)"),
    (b"PAR1\x15\x04\x15", "is a Parquet file, not CSV text; rename it to .parquet"),
    (b"PK\x03\x04\x14\x00\x06\x00", "is a zip archive (an Excel .xlsx workbook?), not CSV text"),
    (b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1", "is an old Excel .xls workbook, not CSV text"),
])
def test_an_empty_or_binary_file_named_csv_is_named_for_what_it_is(tmp_path, content, says):
    from medaudit.exceptions import SchemaError
    from medaudit.io.tables import read_table

    p = tmp_path / "scores.csv"
    p.write_bytes(content)
    import re

    with pytest.raises(SchemaError, match=re.escape(f"'{p}' {says}")) as exc:
        read_table(p)
    assert "\n" not in str(exc.value)


@pytest.mark.parametrize("name", ["a" * 300, "é" * 120, "a" * 300 + "/sub"],
                         ids=["300 ascii bytes", "240 bytes of é", "too long parent"])
def test_out_name_longer_than_the_file_system_allows_is_one_line(tmp_path, capsys, name):
    """The kernel's own limit (os.pathconf PC_NAME_MAX, 255 here) is the witness: the same
    name given to os.mkdir fails with ENAMETOOLONG, or leaves too few bytes for the
    '.NAME.tmp-...' work files medaudit keeps beside its output."""
    first = name.split("/")[0]
    limit = os.pathconf(tmp_path, "PC_NAME_MAX")
    assert len(first.encode()) + 32 > limit
    before = _snapshot(tmp_path)
    out = tmp_path / name
    code = main(["demo", "--out", str(out), "--scale", "0.05", "--n-resamples", "20", "--quiet"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and err.count("\n") == 0, err
    assert "choose a shorter --out" in err and f"allows {limit} per name" in err, err
    assert "Errno" not in err
    assert _snapshot(tmp_path) == before
    from medaudit.io.output import check_output_file
    with pytest.raises(OutputPathError, match="choose a shorter --out"):
        check_output_file(tmp_path / (name + ".html"))


def test_out_in_a_folder_the_kernel_refuses_is_one_line(capsys):
    """/proc accepts no new files even for root (os.access says it is writable)."""
    if not os.path.isdir("/proc/self"):
        pytest.skip("no /proc on this system")
    code = main(["demo", "--out", "/proc/medaudit-out", "--scale", "0.05",
                 "--n-resamples", "20", "--quiet"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and err.count("\n") == 0, err
    assert "'/proc'" in err and "choose another --out" in err and "tmp-" not in err, err


def test_a_failed_swap_puts_the_previous_output_back(tmp_path, monkeypatch):
    """Review finding: with the old output moved aside and the new one failing to move in,
    the old one stayed under a hidden .old name while the message said nothing was written."""
    out = tmp_path / "results"
    with atomic_directory(out) as tmp:
        (tmp / "a.csv").write_text("old\n")
    before = _snapshot(tmp_path)
    real_replace, calls = os.replace, []

    def replace(src, dst):
        calls.append(src)
        if len(calls) == 2:  # the new folder into place
            raise OSError(errno.EIO, "Input/output error", str(dst))
        return real_replace(src, dst)

    monkeypatch.setattr(os, "replace", replace)
    with pytest.raises(OutputPathError, match="nothing was written"):
        with atomic_directory(out, overwrite=True) as tmp:
            (tmp / "a.csv").write_text("new\n")
    assert len(calls) == 3  # aside, in (failed), back
    assert _snapshot(tmp_path) == before


def test_an_input_error_inside_the_block_is_not_called_a_write_error(tmp_path):
    """Reading a missing input inside the block is that input's error, not "could not write
    --out"."""
    missing = tmp_path / "scores.csv"
    with pytest.raises(FileNotFoundError) as e:
        with atomic_directory(tmp_path / "out"):
            missing.read_text()
    assert not isinstance(e.value, OutputPathError) and e.value.filename == str(missing)
    assert sorted(p.name for p in tmp_path.iterdir()) == []
