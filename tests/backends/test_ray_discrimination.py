"""Discrimination, prompts and spectrum cells on Ray: the same bytes as the local path.

The discrimination block sends its bootstrap cells (hard-label and soft-label twins) and
its DeLong cells through ``ctx.map``; prompts and spectrum send their soft twins the same
way.  The witness is the local backend itself (the numbers are witnessed by the block
tests): with ``label_soft`` present, every table a Ray run returns must equal the local
one byte for byte (CSV text and exact frames), and so must the notes.
"""

from __future__ import annotations

import dataclasses

import pandas as pd
import pytest

from medaudit.backends import LocalBackend
from medaudit.blocks import discrimination, prompts, spectrum
from tests._support import run
from tests.blocks.test_soft_everywhere import make_ctx, make_table

ray = pytest.importorskip("ray", reason="the optional extra medaudit[ray] is not installed")

from medaudit.backends.ray_backend import RayBackend  # noqa: E402

BLOCKS = (discrimination, prompts, spectrum)


def _run_all(ctx):
    return {b.NAME: run(b, dataclasses.replace(ctx, _cache={})) for b in BLOCKS}


@pytest.fixture(scope="module")
def local_results():
    ctx = make_ctx(make_table(seed=8))
    return _run_all(dataclasses.replace(ctx, backend=LocalBackend()))


def test_soft_blocks_on_ray_are_byte_identical_to_local(ray_session, local_results):
    ctx = make_ctx(make_table(seed=8))
    backend = RayBackend(num_workers=2)
    try:
        remote = _run_all(dataclasses.replace(ctx, backend=backend))
    finally:
        backend.close()
    n_soft = 0
    for name, res in local_results.items():
        other = remote[name]
        assert other.notes == res.notes, name
        assert list(other.tables) == list(res.tables), name
        for t, df in res.tables.items():
            pd.testing.assert_frame_equal(other.tables[t], df, check_exact=True)
            assert other.tables[t].to_csv(index=False).encode() == df.to_csv(index=False).encode()
            if "criterion" in df.columns:
                n_soft += int(df["criterion"].str.startswith("soft_").sum())
    assert n_soft > 50  # soft rows were compared, not only ordinary ones
    assert len(local_results["discrimination"].tables["metrics"]) > 0


def test_local_backend_equals_no_backend(local_results):
    """LocalBackend (what ``audit`` uses) and the in-process default give the same tables."""
    plain = _run_all(make_ctx(make_table(seed=8)))
    for name, res in plain.items():
        for t, df in res.tables.items():
            pd.testing.assert_frame_equal(local_results[name].tables[t], df, check_exact=True)
