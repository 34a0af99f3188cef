"""The Ray backend: same bytes as the local path, worker death retried, clear errors.

A local Ray instance (2 CPUs, no dashboard, no external services) is started once for
the package (``conftest.ray_session``).  The independent witness of every audit statistic is the local backend
itself (each block's own tests witness the numbers): the Ray outputs must equal its
files byte for byte.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import warnings
from pathlib import Path

import pytest

from medaudit.audit.run import audit, write_outcome
from medaudit.audit.spec import load_spec
from medaudit.backends import ExecutionSpec, LocalBackend, make_backend
from medaudit.exceptions import DegenerateDataWarning, MedauditError, SchemaError

ray = pytest.importorskip("ray", reason="the optional extra medaudit[ray] is not installed")

from medaudit.backends.ray_backend import RayBackend  # noqa: E402
from tests._support import run  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "paper000_simulated.yaml"


def _spec(backend: str = "local", num_workers: int | None = None):
    spec, base = load_spec(EXAMPLE)
    spec = spec.model_copy(update={
        "simulate_scale": 0.05, "n_resamples": 200, "n_permutations": 199,
        "execution": ExecutionSpec(backend=backend, num_workers=num_workers)})
    return spec, base


def _files(directory: Path) -> dict[str, bytes]:
    """Every file the run wrote (tables, results.json, portability, summary.md), by relative path."""
    files = {p.relative_to(directory).as_posix(): p.read_bytes()
             for p in sorted(directory.rglob("*")) if p.is_file()}
    # the comparison is not vacuous: the outputs write_outcome promises are all there
    assert {"results.json", "summary.md", "portability.csv", "portability.parquet"} <= set(files)
    return files


def _assert_same_bytes(a: dict[str, bytes], b: dict[str, bytes]) -> None:
    assert sorted(a) == sorted(b)
    differ = [k for k in a if a[k] != b[k]]
    assert not differ, f"files differ between backends: {differ}"


def _write(outcome, out: Path) -> dict[str, bytes]:
    """write_outcome without the HTML report and figures (slow here, and rendered from
    results.json alone, so identical whenever results.json is)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr("medaudit.report.html.write_report", lambda *a, **k: None)
        write_outcome(outcome, out)
    return _files(out)


@pytest.fixture(scope="module")
def local_files(tmp_path_factory) -> dict[str, bytes]:
    spec, base = _spec("local")
    return _write(audit(spec, base), tmp_path_factory.mktemp("local") / "out")


# ----------------------------------------------------------------------------- audits
@pytest.mark.parametrize("num_workers", [1, 2])
def test_ray_audit_is_byte_identical_to_local(ray_session, local_files, tmp_path, num_workers):
    spec, base = _spec("ray", num_workers)
    files = _write(audit(spec, base), tmp_path / "ray")
    assert len([k for k in files if k.endswith(".csv")]) >= 10  # the comparison is not vacuous
    _assert_same_bytes(local_files, files)
    assert b'"execution"' not in files["results.json"]  # where cells ran is logged, not stored


def _seeded_context(backend=None):
    """Per-seed scores of two models on two cohorts with a retained entry (synthetic)."""
    import numpy as np
    import pandas as pd

    from medaudit.audit.context import ensemble_seeds
    from medaudit.audit.spec import AuditSpec
    from medaudit.io.schema import validate_score_table
    from tests._support import context

    gen = np.random.default_rng(11)
    rows = []
    for cohort, n in (("c1", 30), ("c2", 24)):
        y = np.r_[np.ones(n // 2), np.zeros(n - n // 2)].astype(int)
        for k, m in enumerate(("orig", "retr")):
            for seed in (1, 2, 3):
                s = (gen.uniform(size=n) + (0.3 + 0.2 * k) * y) / (1.3 + 0.2 * k)
                rows += [dict(image_id=f"{cohort}-{j:02d}", cohort=cohort, model=m, prompt="p",
                              seed=seed, score=float(s[j]), label=int(y[j])) for j in range(n)]
    t = validate_score_table(pd.DataFrame(rows), key=("model", "prompt", "cohort", "image_id", "seed"))
    spec = AuditSpec.model_validate({
        "name": "t", "scores": "t.csv", "primary_prompt": "p", "n_resamples": 200,
        "cohorts": {"c1": {}, "c2": {}},
        "retained": [{"a": "orig", "b": "retr", "cohorts": ["c1", "c2"]}]})
    return context(scores=ensemble_seeds(t), spec=spec, seed_scores=t, backend=backend)


def test_retained_seed_cells_identical_on_ray(ray_session):
    import pandas as pd

    from medaudit.blocks import retained

    local = run(retained, _seeded_context())
    with RayBackend(num_workers=2) as backend:
        remote = run(retained, _seeded_context(backend))
    assert len(local.tables["seeds"]) == 2 * 2 * (3 + 2) + 2 * (3 + 1)  # not vacuous
    for name, df in local.tables.items():
        pd.testing.assert_frame_equal(df, remote.tables[name], check_exact=True)
    assert local.notes == remote.notes


class _KillOnce:
    """A cell wrapper that kills its worker process the first time any cell runs."""

    def __init__(self, fn, marker: str):
        self.fn, self.marker = fn, marker

    def __call__(self, item):
        try:
            fd = os.open(self.marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
        except FileExistsError:
            return self.fn(item)
        os.write(fd, str(os.getpid()).encode())
        os.close(fd)
        os._exit(1)  # the worker dies mid-run, without cleanup


KILL_AT_MAP = 4


class _KillingBackend(RayBackend):
    def __init__(self, marker: str, **kwargs):
        super().__init__(**kwargs)
        self.marker = marker
        self.calls = 0
        self.armed_at = None

    def map(self, fn, items):
        self.calls += 1
        items = list(items)
        # a few maps in (the run is well under way), on the first map that has cells to run
        if self.armed_at is None and self.calls >= KILL_AT_MAP and items:
            self.armed_at = self.calls
            fn = _KillOnce(fn, self.marker)
        return super().map(fn, items)


def test_worker_killed_mid_run_is_retried_and_outputs_identical(ray_session, local_files, tmp_path,
                                                                monkeypatch):
    import medaudit.backends as backends

    marker = tmp_path / "killed.pid"
    made = []

    def make(spec):
        made.append(_KillingBackend(str(marker), num_workers=2))
        return made[0]

    monkeypatch.setattr(backends, "make_backend", make)
    spec, base = _spec("ray", 2)
    files = _write(audit(spec, base), tmp_path / "ray")
    assert marker.exists(), "no worker was killed: the test did not exercise a retry"
    assert int(marker.read_text()) != os.getpid()  # a worker died, not the driver
    assert made[0].calls > made[0].armed_at + 2  # cells ran before and after the kill: mid-run
    _assert_same_bytes(local_files, files)


def _always_die(x):
    os._exit(1)


def test_worker_dying_every_time_is_a_clear_error(ray_session):
    b = RayBackend(max_retries=0)
    with pytest.raises(MedauditError, match="worker died 1 time"):
        b.map(_always_die, [1])


# ----------------------------------------------------------------------------- map semantics
def _slow_square(x):
    time.sleep(0.05 * (3 - x))  # later items finish first
    return x * x


def test_results_come_back_in_item_order(ray_session):
    for workers in (None, 1, 2):
        assert RayBackend(num_workers=workers).map(_slow_square, [0, 1, 2, 3]) == [0, 1, 4, 9]
    assert RayBackend().map(_slow_square, []) == []


def _bad_cell(x):
    if x == 2:
        raise SchemaError(f"cohort 'c{x}' lacks image 'i{x}'")
    return x


def test_a_cell_error_is_the_original_exception(ray_session):
    with pytest.raises(SchemaError) as info:
        RayBackend(num_workers=2).map(_bad_cell, range(4))
    assert type(info.value) is SchemaError
    assert str(info.value) == "cohort 'c2' lacks image 'i2'"  # as a local run would say
    assert any("Ray task 3 of 4" in n for n in info.value.__notes__)


def _two_bad_cells(x):
    if x == 1:
        time.sleep(1.0)  # fails last ...
        raise SchemaError("cell 1 is bad")
    if x == 3:
        raise ValueError("cell 3 is bad")  # ... this one fails first
    return x


def test_the_error_is_the_first_failing_cell_in_item_order(ray_session):
    # the local backend stops at item 1; Ray must report the same error whatever finishes first
    with pytest.raises(SchemaError, match="cell 1 is bad"):
        LocalBackend().map(_two_bad_cells, range(5))
    with pytest.raises(SchemaError, match="cell 1 is bad"):
        RayBackend(num_workers=2).map(_two_bad_cells, range(5))


def _warning_cell(x):
    if x % 2:
        warnings.warn(f"degenerate {x}", DegenerateDataWarning, stacklevel=1)
    return x


def test_warnings_in_cells_reach_the_driver_in_item_order(ray_session):
    with pytest.warns(DegenerateDataWarning) as rec:
        out = RayBackend().map(_warning_cell, range(5))
    assert out == list(range(5))
    assert [str(w.message) for w in rec if w.category is DegenerateDataWarning] == [
        "degenerate 1", "degenerate 3"]


def test_closed_backend_refuses_work(ray_session):
    b = RayBackend()
    b.close()
    b.close()  # idempotent
    assert ray.is_initialized()  # it did not start Ray, so it does not stop it
    with pytest.raises(MedauditError, match="closed"):
        b.map(_slow_square, [1])


def test_bad_options_name_the_parameter():
    with pytest.raises(MedauditError, match="num_workers"):
        RayBackend(num_workers=0)
    with pytest.raises(MedauditError, match="max_retries"):
        RayBackend(max_retries=-1)


# ----------------------------------------------------------------------------- optional extra
def test_missing_ray_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` now raises ImportError
    with pytest.raises(MedauditError, match=r"pip install 'medaudit\[ray\]'"):
        make_backend(ExecutionSpec(backend="ray"))
    assert isinstance(make_backend(ExecutionSpec()), LocalBackend)  # local needs no Ray
    assert isinstance(make_backend(None), LocalBackend)


def test_core_and_local_audit_do_not_import_ray():
    # every module of this change (the Ray ones included: they import ray only when used),
    # the CLI, and a small audit run end to end on the local backend
    code = ("import sys\n"
            "import medaudit.cli.main, medaudit.backends.ray_backend, medaudit.backends.ray_scoring\n"
            "from medaudit.blocks import operating_points, prompts, spectrum, prevalence\n"
            "from medaudit.blocks import transport, retained\n"
            "from medaudit.audit.run import audit\n"
            "from medaudit.audit.spec import load_spec\n"
            "from medaudit.backends import ExecutionSpec\n"
            f"spec, base = load_spec({str(EXAMPLE)!r})\n"
            "spec = spec.model_copy(update={'simulate_scale': 0.02, 'n_resamples': 20,\n"
            "                               'n_permutations': 19, 'execution': ExecutionSpec()})\n"
            "assert audit(spec, base).results\n"
            "assert 'ray' not in sys.modules, 'ray was imported'\n")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert res.returncode == 0, res.stderr
