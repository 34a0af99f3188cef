"""Per-batch progress of the resampling engines (stats._progress)."""

import numpy as np

from medaudit.stats import bootstrap_ci, negative_group_permutation_test
from medaudit.stats._progress import replicate_progress


def _data(n=60, seed=0):
    rng = np.random.default_rng(seed)
    y = np.r_[np.ones(n // 2), np.zeros(n - n // 2)]
    return y, rng.random(n) + 0.3 * y


def test_bootstrap_reports_every_batch_and_results_do_not_change():
    y, s = _data()
    seen = []
    with replicate_progress(lambda kind, done, total: seen.append((kind, done, total))):
        r1 = bootstrap_ci(y, s, n_resamples=95, rng=1, batch=20)
    r0 = bootstrap_ci(y, s, n_resamples=95, rng=1, batch=20)
    assert seen == [("bootstrap", d, 95) for d in (20, 40, 60, 80, 95)]
    assert (r1.ci_low, r1.ci_high) == (r0.ci_low, r0.ci_high)


def test_permutation_reports_and_listener_is_scoped():
    y, s = _data(seed=2)
    grp = np.where(np.arange(y.size) % 2 == 0, "a", "b")
    seen = []
    with replicate_progress(lambda *a: seen.append(a)):
        negative_group_permutation_test(s[y == 1], s[(y == 0) & (grp == "a")],
                                        s[(y == 0) & (grp == "b")], n_resamples=49, rng=3, batch=25)
    assert seen == [("permutation", 25, 49), ("permutation", 49, 49)]
    seen.clear()
    bootstrap_ci(y, s, n_resamples=20, rng=1)  # outside the scope: nobody listens
    assert seen == []
