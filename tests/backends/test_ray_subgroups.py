"""The subgroups block on Ray: the same bytes as the local path.

Its cells (one per cohort x subgroup column, sharing the cohort's key) go through
``ctx.map``; the numbers are witnessed in ``tests/blocks/test_subgroups.py``, so the witness
here is the local run itself: every table and note of a Ray run must equal the local one.
"""

from __future__ import annotations

import dataclasses

import pandas as pd
import pytest

from medaudit.backends import LocalBackend
from medaudit.blocks import subgroups
from tests._support import run
from tests.blocks.test_subgroups import _ctx

ray = pytest.importorskip("ray", reason="the optional extra medaudit[ray] is not installed")

from medaudit.backends.ray_backend import RayBackend  # noqa: E402


def test_subgroups_on_ray_are_byte_identical_to_local(ray_session):
    local = run(subgroups, dataclasses.replace(_ctx(), backend=LocalBackend()))
    backend = RayBackend(num_workers=2)
    try:
        remote = run(subgroups, dataclasses.replace(_ctx(), backend=backend))
    finally:
        backend.close()
    assert remote.notes == local.notes and list(remote.tables) == list(local.tables)
    for name, df in local.tables.items():
        assert len(df) > 0
        pd.testing.assert_frame_equal(remote.tables[name], df, check_exact=True)
        assert remote.tables[name].to_csv(index=False) == df.to_csv(index=False)
