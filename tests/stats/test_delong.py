"""DeLong placements, variance, intervals and tests (methods.md M0.9; anchors T12).

Witnesses: R's pROC (tests/reference, with the R scripts that made the CSVs), the
brute-force double sums of ``tests/_oracles.py`` and hand-worked cases.
"""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest
from scipy import special

from medaudit.exceptions import MedauditError
from medaudit.stats import delong_test_unpaired

REFERENCE_DIR = Path(__file__).parents[1] / "reference"
_UNPAIRED_DATA = pd.read_csv(REFERENCE_DIR / "delong_unpaired_pROC_data.csv", comment="#")
_UNPAIRED = pd.read_csv(REFERENCE_DIR / "delong_unpaired_pROC.csv", comment="#").set_index("dataset")


def _unpaired_inputs(dataset):
    d = _UNPAIRED_DATA[_UNPAIRED_DATA["dataset"] == dataset]
    out = []
    for smp in ("a", "b"):
        x = d[d["sample"] == smp].sort_values("item")
        out += [x["y_true"].to_numpy(float), x["score"].to_numpy(float)]
    return out


@pytest.mark.parametrize("dataset", list(_UNPAIRED.index))
def test_unpaired_t_reproduces_pROC_roc_test(dataset):
    """pROC refers the unpaired statistic to Student's t with Welch-type df over the two
    samples' sizes; ``distribution="t"`` reproduces its p-value for every alternative."""
    ya, sa, yb, sb = _unpaired_inputs(dataset)
    ref = _UNPAIRED.loc[dataset]
    for alt, col in (("two-sided", "p_two_sided"), ("greater", "p_greater"), ("less", "p_less")):
        r = delong_test_unpaired(ya, sa, yb, sb, alternative=alt, distribution="t")
        assert r.auc_a == pytest.approx(ref["auc_a"], rel=1e-12)
        assert r.auc_b == pytest.approx(ref["auc_b"], rel=1e-12)
        assert r.statistic == pytest.approx(ref["statistic"], rel=1e-10)
        assert r.df == pytest.approx(ref["df"], rel=1e-10)
        assert r.pvalue == pytest.approx(ref[col], rel=1e-9), alt
        assert r.distribution == "t"
        z = delong_test_unpaired(ya, sa, yb, sb, alternative=alt)
        assert (z.statistic, z.variance, z.ci_low) == (r.statistic, r.variance, r.ci_low)
        assert z.distribution == "normal" and math.isnan(z.df)
    normal = delong_test_unpaired(ya, sa, yb, sb)
    assert normal.pvalue == pytest.approx(2 * special.ndtr(-abs(ref["statistic"])), rel=1e-9)


def test_unpaired_distribution_is_checked():
    with pytest.raises(MedauditError, match="distribution"):
        delong_test_unpaired([0, 1], [0.1, 0.9], [0, 1], [0.2, 0.8], distribution="student")
