"""The agreement block's fold cells on Ray: the same bytes as the local path.

The block hands run_design's fold cells (GLMM on, so every cell fits one vmap chunk in a
worker) to ``ctx.map``.  The witness is the local run itself (the numbers are witnessed
by tests/agreement and tests/blocks/test_agreement.py): on Ray with 2 workers every
table, written to CSV, must equal the local one byte for byte, and so must the notes.
"""

from __future__ import annotations

import pandas as pd
import pytest

from medaudit.agreement.judgments import validate_judgments
from medaudit.audit.spec import AuditSpec
from medaudit.backends import LocalBackend
from medaudit.blocks import agreement
from medaudit.simulate import simulate_paper002
from tests._support import SpecContext, context, run

ray = pytest.importorskip("ray", reason="the optional extra medaudit[ray] is not installed")
pytest.importorskip("numpyro", reason="the GLMM needs the optional extra medaudit[glmm]")

from medaudit.backends.ray_backend import RayBackend  # noqa: E402


def _ctx(backend) -> SpecContext:
    spec = AuditSpec.model_validate({
        "name": "t", "judgments": {"simulate": "paper002", "simulate_scale": 0.05},
        "blocks": ["agreement"],
        "agreement": {"repeats": 2, "budgets": [0, 25, 50], "glmm": True, "glmm_steps": 30,
                      "selection": True, "n_resamples": 500}})
    ev, _ = validate_judgments(simulate_paper002(rng=spec.seed, scale=0.05), source="sim")
    return context(scores=pd.DataFrame(), spec=spec, judgments=ev, backend=backend)


class _Counting:
    """Delegates to a backend and records the cells each map call sent."""

    def __init__(self, inner):
        self.inner, self.calls = inner, []

    def map(self, fn, items):
        items = list(items)
        self.calls.append((fn.__name__, len(items)))
        return self.inner.map(fn, items)


@pytest.fixture(scope="module")
def local():
    return run(agreement, _ctx(LocalBackend()))


@pytest.mark.slow
def test_agreement_on_ray_is_byte_identical_to_local(ray_session, local, tmp_path):
    backend = RayBackend(num_workers=2)
    counting = _Counting(backend)
    try:
        remote = run(agreement, _ctx(counting))
    finally:
        backend.close()
    # 36 LOIO + 48 development folds in cells of 32: three cells went to the workers
    assert counting.calls == [("_fit_cell", 3)]
    assert remote.notes == local.notes
    assert list(remote.tables) == list(local.tables)
    assert {"fixed_policy", "selection", "coverage", "family_gap"} <= set(local.tables)
    fixed = local.tables["fixed_policy"]
    assert (fixed["estimator"] == "glmm").sum() == 2 * 3 * 3 * 2 * 2  # the GLMM ran on workers
    for name, df in local.tables.items():
        a, b = tmp_path / f"local_{name}.csv", tmp_path / f"ray_{name}.csv"
        df.to_csv(a, index=False)
        remote.tables[name].to_csv(b, index=False)
        assert a.read_bytes() == b.read_bytes(), name
        pd.testing.assert_frame_equal(remote.tables[name], df, check_exact=True)


def test_local_backend_equals_no_backend(local):
    """LocalBackend and the in-process default give the same tables."""
    plain = run(agreement, _ctx(None))
    assert list(plain.tables) == list(local.tables)
    for name, df in local.tables.items():
        pd.testing.assert_frame_equal(plain.tables[name], df, check_exact=True)
