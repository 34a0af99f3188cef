"""The local backend's process pool: the serial bytes, whatever the number of workers.

The witness is the serial run itself (every number is witnessed by the block and stats
tests): the paper-000 simulated audit at small scale, run in process and on pools of 2
and 3 workers, must write the same files byte for byte — every table (CSV and Parquet),
results.json, summary.md, the report and its figures (drawn by worker processes too).
Large cells are cut into replicate ranges on a pool; the cut must not show in any file.
"""

from __future__ import annotations

import pickle
import warnings
from pathlib import Path

import numpy as np
import pytest

from medaudit.audit.outcome import load_outcome, results_text
from medaudit.audit.run import audit, write_outcome
from medaudit.audit.spec import load_spec
from medaudit.backends import ExecutionSpec, LocalBackend, make_backend
from medaudit.backends.local import MIN_POOL_WORK, usable_cores, work_of
from medaudit.blocks import cells as C
from medaudit.exceptions import MedauditError

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "paper000_simulated.yaml"


def _spec(num_workers: int | None):
    spec, base = load_spec(EXAMPLE)
    spec = spec.model_copy(update={"simulate_scale": 0.1, "n_resamples": 300,
                                   "n_permutations": 199,
                                   "execution": ExecutionSpec(num_workers=num_workers)})
    return spec, base


def _files(d: Path) -> dict[str, bytes]:
    return {p.relative_to(d).as_posix(): p.read_bytes() for p in sorted(d.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def serial_run(tmp_path_factory):
    spec, base = _spec(1)
    out = tmp_path_factory.mktemp("serial") / "out"
    outcome = audit(spec, base)
    write_outcome(outcome, out)
    return outcome, out


@pytest.fixture(scope="module")
def serial(serial_run):
    return _files(serial_run[1])


@pytest.mark.parametrize("workers", [2, 3])
def test_pool_audit_is_byte_identical_to_serial(serial, tmp_path, monkeypatch, workers):
    cut = []
    ranges = C.cell_ranges

    def spy(works, n_resamples, parallelism):
        out = ranges(works, n_resamples, parallelism)
        cut.extend(len(r) for r in out)
        return out

    monkeypatch.setattr(C, "cell_ranges", spy)
    spec, base = _spec(workers)
    write_outcome(audit(spec, base), tmp_path / "out")
    files = _files(tmp_path / "out")
    assert max(cut) > 1  # some cell was cut into replicate ranges: the comparison covers it
    assert sum(k.endswith(".csv") for k in files) >= 10 and any(k.endswith(".svg") for k in files)
    assert sorted(files) == sorted(serial)
    differ = [k for k in files if files[k] != serial[k]]
    assert not differ, f"files differ between 1 and {workers} workers: {differ}"


def test_results_text_rebuilds_what_load_outcome_reads(serial_run):
    outcome, out = serial_run
    text, rebuilt = results_text(outcome)
    assert (out / "results.json").read_text(encoding="utf-8") == text + "\n"
    read = load_outcome(out)
    assert list(rebuilt.results) == list(read.results)
    for name, res in read.results.items():
        assert list(rebuilt.results[name].tables) == list(res.tables)
        for t, df in res.tables.items():
            assert rebuilt.results[name].tables[t].equals(df), (name, t)
            assert list(rebuilt.results[name].tables[t].dtypes) == list(df.dtypes)
        assert rebuilt.results[name].notes == res.notes
    assert rebuilt.claims.equals(read.claims)
    assert rebuilt.provenance == read.provenance
    assert pickle.dumps(rebuilt.spec) == pickle.dumps(read.spec)


# ----------------------------------------------------------------------------- the backend
def _warn_and_fail(x):
    if x == 3:  # fails after cell 5 has failed on the other worker
        import time

        time.sleep(0.5)
    if x == 1:
        warnings.warn(f"cell {x}", UserWarning, stacklevel=2)
    if x in (3, 5):
        raise ValueError(f"cell {x} failed")
    return x * x


def test_pool_map_keeps_item_order_warnings_and_the_first_error():
    with LocalBackend(2) as b:
        with pytest.warns(UserWarning, match="cell 1"):
            assert b.map(_warn_and_fail, [0, 1, 2, 4]) == [0, 1, 4, 16]
        with pytest.raises(ValueError, match="cell 3 failed"):  # the first in item order
            b.map(_warn_and_fail, [0, 3, 5, 2])
        assert b.map(abs, [-1, -2]) == [1, 2]  # the pool survives a failed map


def test_default_uses_the_pool_only_for_enough_work():
    b = make_backend(ExecutionSpec())
    try:
        if usable_cores() >= 2:
            assert b.parallelism(MIN_POOL_WORK) == b.workers >= 2
        assert b.parallelism(MIN_POOL_WORK / 10) == 1
        assert make_backend(ExecutionSpec(num_workers=1)).parallelism(1e12) == 1
        assert make_backend(ExecutionSpec(num_workers=3)).parallelism(1.0) == 3
    finally:
        b.close()
    with pytest.raises(MedauditError, match="num_workers must be a positive integer"):
        LocalBackend(0)


def test_work_estimate_counts_arrays_and_resamples():
    import functools

    from medaudit.blocks.context import Resampling

    cell = C.BootstrapCell(key=("k",), label=np.zeros(10), scores={"a": np.ones(10),
                                                                   "b": np.ones(10)},
                           metrics=("roc_auc",))
    fn = functools.partial(C.run_cell, resampling=Resampling(seed=1, n_resamples=200))
    assert work_of(fn, cell) == 30 * 200
    assert work_of(abs, 3) == 0.0


def test_cut_cells_join_to_the_uncut_results():
    """Any cut of a cell's replicates joins to the uncut cell, bit for bit."""
    from medaudit.blocks.context import Resampling

    rng = np.random.default_rng(5)
    y = (rng.random(300) < 0.3).astype(float)
    cell = C.BootstrapCell(key=("cut",), label=y,
                           scores={"a": 0.5 * (rng.random(300) + y), "b": 0.5 * rng.random(300) + 0.3 * y},
                           metrics=("roc_auc", "average_precision", "brier_score"),
                           design="within_label", label_soft=np.clip(y * 0.8 + 0.1, 0, 1))
    res = Resampling(seed=3, n_resamples=230)
    whole = C.run_cell(cell, res)
    for edges in ([0, 100, 230], [0, 1, 2, 77, 229, 230]):
        parts = [C.run_cell(cell, res, (a, b)) for a, b in zip(edges, edges[1:], strict=False)]
        joined = C._joined(cell, res.seed, parts)
        assert sorted(joined.marginal) == sorted(whole.marginal)
        for k, r in whole.marginal.items():
            j = joined.marginal[k]
            np.testing.assert_array_equal(j.replicates, r.replicates)
            assert (j.estimate, j.ci_low, j.ci_high, j.n_resamples, j.n_degenerate, j.options) == (
                r.estimate, r.ci_low, r.ci_high, r.n_resamples, r.n_degenerate, r.options)
        for k, r in whole.differences.items():
            np.testing.assert_array_equal(joined.differences[k].replicates, r.replicates)
            assert joined.differences[k].ci_low == r.ci_low


_ORPHAN = r"""
import sys, time
from medaudit.backends.local import LocalBackend
b = LocalBackend(2)
b.map(time.sleep, [0.01, 0.01])
print(" ".join(str(p) for p in b._pool._processes), flush=True)
time.sleep(60)
"""


def _running(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"  # a zombie has exited
    except OSError:
        return False


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc (Linux)")
def test_workers_exit_when_the_audit_is_killed():
    """kill -9 of the process that owns the pool: its workers do not wait for work forever."""
    import os
    import signal
    import subprocess
    import sys
    import time

    env = {**os.environ, "PYTHONPATH": str(ROOT / "src") + os.pathsep
           + os.environ.get("PYTHONPATH", "")}
    proc = subprocess.Popen([sys.executable, "-c", _ORPHAN], stdout=subprocess.PIPE, text=True,
                            env=env)
    pids = [int(p) for p in proc.stdout.readline().split()]
    assert len(pids) == 2
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    deadline = time.monotonic() + 10
    alive = pids
    while alive and time.monotonic() < deadline:
        time.sleep(0.2)
        alive = [p for p in pids if _running(p)]
    assert not alive, f"orphaned workers {alive} still running"
