"""Frozen result dataclasses of the statistics core (medaudit.stats._results)."""

from __future__ import annotations

import dataclasses
import json
import math

import numpy as np
import pytest

from medaudit.stats import bootstrap_ci, delong_test_unpaired


def test_results_are_frozen_and_serialise_to_plain_values():
    r = bootstrap_ci([0, 0, 1, 1, 0, 1], [.1, .4, .35, .8, .2, .9], n_resamples=50, rng=1,
                     design="within_label")
    with pytest.raises(dataclasses.FrozenInstanceError):
        r.estimate = 0.0  # type: ignore[misc]
    d = r.to_dict()
    assert "replicates" not in d and json.loads(json.dumps(d))["metric"] == "roc_auc"
    full = r.to_dict(include_arrays=True)
    assert full["replicates"] == r.replicates.tolist() and len(full["replicates"]) == 50
    assert r.n_valid == r.n_resamples - r.n_degenerate == 50


def test_paired_auc_test_records_its_reference_distribution():
    z = delong_test_unpaired([0, 1, 0, 1, 1], [.1, .9, .7, .8, .3], [0, 1, 0, 0, 1, 0],
                             [.2, .6, .1, .4, .5, .3])
    t = delong_test_unpaired([0, 1, 0, 1, 1], [.1, .9, .7, .8, .3], [0, 1, 0, 0, 1, 0],
                             [.2, .6, .1, .4, .5, .3], distribution="t")
    assert (z.distribution, t.distribution) == ("normal", "t")
    assert math.isnan(z.to_dict()["df"]) and t.to_dict()["df"] == 4.0
    assert np.isfinite(t.pvalue) and t.pvalue > z.pvalue  # heavier tails
