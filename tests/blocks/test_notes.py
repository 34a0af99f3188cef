"""The shared caveats of blocks.notes (the ones no block test pins by itself)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from medaudit.blocks.notes import join, outside_interval_note


def test_an_estimate_outside_its_interval_is_said_and_one_inside_is_not():
    assert outside_interval_note(0.2, 0.1, 0.3) == ""
    assert outside_interval_note(0.1, 0.1, 0.3) == ""  # on a bound: inside
    below = outside_interval_note(0.1547, 0.1548, 0.284)
    assert below.startswith("the estimate lies below its percentile interval")
    assert outside_interval_note(0.4, 0.1, 0.3).startswith("the estimate lies above")
    for bad in (math.nan, math.inf):
        assert outside_interval_note(bad, 0.1, 0.3) == outside_interval_note(0.2, bad, 0.3) == ""
    assert join("a", "", below).count("; ") == 1


def test_the_plug_in_ece_is_biased_upward_in_resamples_so_the_note_can_fire():
    """Witness of the note's reason: with calibrated scores (true ECE 0), the ECE of each
    resample is above the ECE of the sample in most replicates (noise only adds to
    |mean(p) - mean(y)| per bin), computed here by scikit-learn-free brute force."""
    rng = np.random.default_rng(0)
    n = 60
    p = rng.random(n)
    y = (rng.random(n) < p).astype(float)

    def ece(p, y, bins=15):
        b = np.minimum((p * bins).astype(int), bins - 1)
        df = pd.DataFrame({"b": b, "p": p, "y": y})
        g = df.groupby("b")
        return float((g.size() * (g["p"].mean() - g["y"].mean()).abs()).sum() / len(p))

    point = ece(p, y)
    reps = [ece(p[i], y[i]) for i in (rng.integers(0, n, n) for _ in range(200))]
    assert np.mean(np.array(reps) > point) > 0.6
