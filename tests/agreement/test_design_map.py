"""run_design's fold cells through a ``map``: any order, any runner, the same DesignResult.

``run_design(..., map=...)`` hands its fitting work to ``map(fn, items)`` as independent
cells of ``glmm.CHUNK`` consecutive folds.  Witnesses: maps that run the cells in reverse
and in a shuffled order (each cell and its result pickled, as a worker would receive and
return them) give tables identical to the default in-order loop, byte for byte; and the
GLMM of every fold equals a fit of all the design's pools in one ``fit_glmm_batch`` call
(the implementation before cells existed), so splitting into cells changed nothing.
"""

from __future__ import annotations

import dataclasses
import json
import math
import pickle

import numpy as np
import pandas as pd
import pytest

from medaudit.agreement import design
from medaudit.agreement.design import JudgmentData, run_design
from medaudit.exceptions import MedauditError
from tests.agreement.test_design import _table

pytest.importorskip("numpyro", reason="the GLMM needs the optional extra medaudit[glmm]")

from medaudit.agreement.glmm import CHUNK, fit_glmm_batch  # noqa: E402

KW = dict(estimators=("naive", "hdcal", "target_only", "beta_binomial", "glmm"),
          candidates=("naive", "hdcal", "glmm", "beta_binomial"), budgets=(0, 10, 20),
          repeats=2, glmm_steps=25)
#: 2 models x 3 targets x 3 budgets x 2 repeats LOIO + 2 x 6 x 2 x 2 development folds
N_FOLDS = 36 + 48


def _json(x):
    if isinstance(x, np.ndarray):
        return f"{x.dtype}:{x.shape}:{x.tobytes().hex()}"
    return repr(x)


def _tables(res: design.DesignResult) -> dict[str, pd.DataFrame]:
    """Every number of a DesignResult as tidy frames (arrays as exact bytes)."""
    rows = []
    for f in [*res.loio, *res.dev.values()]:
        k = f.key
        for est in f.prob:
            rows.append({"kind": k.kind, "model": k.model, "target": k.target,
                         "sources": str(k.sources), "budget": k.budget, "rep": k.rep,
                         "estimator": est, "n_shot": f.n_shot, "n_test": f.n_test,
                         "brier": f.brier[est], "ece": f.ece.get(est, np.nan),
                         "prob": _json(f.prob[est]),
                         "cells": _json(np.vstack([f.finding, f.direction, f.y_test,
                                                   f.n_test_cell, f.y_train, f.n_train])),
                         "info": json.dumps(f.info[est], sort_keys=True, default=_json)})
    dec = [{**dataclasses.asdict(x), "dev_brier": json.dumps(x.dev_brier)} for x in res.decisions]
    return {"folds": pd.DataFrame(rows), "decisions": pd.DataFrame(dec),
            "settings": pd.DataFrame([{"settings": json.dumps(res.settings, sort_keys=True)}])}


def _assert_same(a: dict[str, pd.DataFrame], b: dict[str, pd.DataFrame]) -> None:
    assert list(a) == list(b)
    for name in a:
        pd.testing.assert_frame_equal(a[name], b[name], check_exact=True)
        assert a[name].to_csv(index=False).encode() == b[name].to_csv(index=False).encode(), name


def _in_order(order, fn, items):
    """Run cell ``order[0]`` first, ..., each pickled both ways; results in item order."""
    out = [None] * len(items)
    for i in order:
        f, x = pickle.loads(pickle.dumps(fn)), pickle.loads(pickle.dumps(items[i]))
        out[i] = pickle.loads(pickle.dumps(f(x)))
    return out


@pytest.fixture(scope="module")
def data() -> JudgmentData:
    return JudgmentData.from_columns(**_table(seed=3, n_studies=40))


@pytest.fixture(scope="module")
def default(data):
    return run_design(data, **KW)


def test_reverse_and_shuffled_maps_give_identical_tables(data, default):
    seen = []

    def reverse(fn, items):
        seen.append([len(c.preps) for c in items])
        return _in_order(range(len(items) - 1, -1, -1), fn, items)

    order = np.random.default_rng(7).permutation(math.ceil(N_FOLDS / CHUNK))
    assert list(order) != sorted(order)  # really out of order

    def shuffled(fn, items):
        return _in_order(order, fn, items)

    want = _tables(default)
    assert len(default.loio) + len(default.dev) == N_FOLDS
    assert len(want["decisions"]) == 2 * 3 * 2 * 2
    _assert_same(_tables(run_design(data, **KW, map=reverse)), want)
    _assert_same(_tables(run_design(data, **KW, map=shuffled)), want)
    # cells are whole GLMM chunks of the fold list (the last one the remainder)
    assert seen == [[CHUNK, CHUNK, N_FOLDS - 2 * CHUNK]]


def test_glmm_equals_one_batch_over_all_folds(data, default):
    """The pre-cell implementation: every fold's pool in one fit_glmm_batch call."""
    folds = [*default.loio, *default.dev.values()]
    preps = [design._prepare(data, f.key, 42) for f in folds]
    fits = fit_glmm_batch([p.pool for p in preps], seeds=[42 + f.key.rep for f in folds],
                          n_steps=KW["glmm_steps"], shape=(3, 4))
    n_checked = 0
    for f, g in zip(folds, fits, strict=True):
        if "glmm" not in f.prob:
            continue
        want = g.predict(np.full(f.finding.size, f.key.target), f.finding, f.direction)
        assert f.prob["glmm"].tobytes() == want.tobytes(), f.key
        n_checked += 1
    assert n_checked == N_FOLDS  # glmm is in Set A and Set B: every fold has it


def test_map_that_reorders_results_is_refused(data):
    def wrong(fn, items):
        return [fn(x) for x in reversed(items)]

    with pytest.raises(MedauditError, match="order of the cells"):
        run_design(data, **KW, map=wrong)
