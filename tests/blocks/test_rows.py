"""The row helpers: one E/provenance layout, and the run seed stamped once, by the runner."""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import medaudit.blocks as blocks_pkg
from medaudit.blocks.rows import E_COLUMNS, PROVENANCE_COLUMNS, spec_row, stamp_seed, verdict


def test_spec_row_order_and_empty_seed():
    row = spec_row(model="m", prompt="p", cohort="c", criterion="auroc", estimate=0.7)
    assert list(row)[:11] == [*E_COLUMNS, *PROVENANCE_COLUMNS]
    assert row["seed"] is None and row["estimate"] == 0.7


def test_stamp_seed_fills_only_empty_cells_and_keeps_order():
    t = pd.DataFrame([spec_row(model="m", prompt="p", cohort="c", criterion="a"),
                      spec_row(model="m", prompt="p", cohort="c", criterion="b", seed=42)])
    out = stamp_seed(t, 2026)
    assert list(out["seed"]) == [2026, 42] and out["seed"].dtype == np.int64
    assert list(out.columns) == list(t.columns)
    assert t["seed"].isna().iloc[0]  # the block's own table is not changed in place


def test_stamp_seed_leaves_full_or_seedless_tables_alone():
    full = pd.DataFrame({"seed": [1, 2], "x": [0.1, 0.2]})
    assert stamp_seed(full, 9) is full
    bare = pd.DataFrame({"x": [1.0]})
    assert stamp_seed(bare, 9) is bare


@pytest.mark.parametrize("lo,hi,direction,want", [(0.1, 0.2, 1, "a_better"), (-0.2, -0.1, 1, "b_better"),
                                                  (0.1, 0.2, -1, "b_better"), (-0.1, 0.1, 1, "unresolved"),
                                                  (np.nan, 0.1, 1, "not defined")])
def test_verdict(lo, hi, direction, want):
    assert verdict(lo, hi, direction) == want
    assert verdict(lo, hi, direction, n_degenerate=0) == want


@pytest.mark.parametrize(("lo", "hi"), [(0.1, 0.3), (-0.3, -0.1), (-0.1, 0.1)])
def test_an_interval_that_left_replicates_out_decides_nothing(lo, hi):
    # probe finding: a difference from a cohort with one positive (39 of 100 replicates
    # undefined) read b_better in the table while the claims matrix said unresolved
    assert verdict(lo, hi, +1, n_degenerate=39) == "unresolved"
    assert verdict(np.nan, hi, +1, n_degenerate=39) == "not defined"


def test_no_block_stamps_the_run_seed_itself():
    """Blocks leave ``seed`` to the runner: no ``seed=ctx.seed`` / ``seed=res.seed`` keyword.

    Only a seed of the block's own (the agreement block's ``first_seed + repeat``) may be
    written by a block; the run seed is stamped once in ``audit.run.run_block``.
    """
    offenders = []
    # agreement.py: its tables of the repeats' seeds (TableSchema.run_seed=False) hold one
    # row drawn from the run seed, which that row has to say itself
    for path in sorted(Path(blocks_pkg.__file__).parent.glob("*.py")):
        if path.name == "agreement.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.keyword) or node.arg != "seed":
                continue
            v = node.value
            if isinstance(v, ast.Attribute) and v.attr == "seed" or \
                    isinstance(v, ast.Name) and v.id == "seed" and path.name != "cells.py":
                offenders.append(f"{path.name}:{v.lineno}")
    assert offenders == []


def test_agreement_tables_of_the_repeats_seeds_are_not_stamped():
    from medaudit.blocks import BLOCKS

    own = {t.name for t in BLOCKS["agreement"].tables if not t.run_seed}
    assert own == {"comparisons", "family_gap", "uncertain_sensitivity", "robustness",
                   "robustness_summary"}
    assert all(t.run_seed for b in BLOCKS.values() if b.name != "agreement" for t in b.tables)


def test_every_table_of_the_paper000_blocks_carries_the_run_seed():
    from tests._support import run
    from tests.blocks.conftest import small_context

    ctx = small_context(scale=0.03, seed=77, n_resamples=40, n_permutations=19)
    for name in ctx.spec.blocks:
        res = run(name, ctx)
        for tname, t in res.tables.items():
            if "seed" in t.columns:
                assert (t["seed"] == 77).all() and t["seed"].dtype == np.int64, (name, tname)
