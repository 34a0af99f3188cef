"""Messages show numbers as numbers (issue 16 item 7): NumPy 2 prints ``np.float64(1.5)`` as a
value's repr, and a message that quoted it with ``!r`` read like code.  Each case passes a NumPy
scalar (or an array whose element becomes one) where a user or a block would, and the message
must show the plain number.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from medaudit._validation import check_fraction, check_n_resamples, shown
from medaudit.exceptions import MedauditError
from medaudit.io.messages import quote
from medaudit.stats import adjust_pvalues, proportion_ci, threshold_metrics
from medaudit.stats.curves import sensitivity_at_specificities

Y, S = [0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8]

CASES = [
    pytest.param(lambda: check_fraction(np.float64(1.5), name="power"), "got 1.5", id="fraction"),
    pytest.param(lambda: check_n_resamples(np.int64(-3)), "got -3", id="n_resamples"),
    pytest.param(lambda: adjust_pvalues(np.array([0.2, 1.5])), "found 1.5 at index 1", id="pvalues"),
    pytest.param(lambda: threshold_metrics(Y, S, threshold=np.float64("nan")), "got nan",
                 id="threshold"),
    pytest.param(lambda: proportion_ci(np.float64(-1.0), 10), "got -1.0", id="count"),
    pytest.param(lambda: sensitivity_at_specificities(Y, S, np.array([0.5, 1.25])),
                 "from 0.5 to 1.25", id="specificities"),
]


@pytest.mark.parametrize("call, text", CASES)
def test_numpy_values_read_as_numbers(call, text):
    with pytest.raises(MedauditError) as err:
        call()
    msg = str(err.value)
    assert text in msg, msg
    assert "np." not in msg and "float64" not in msg and "int64" not in msg, msg


def test_manifest_label_cell_is_shown_as_the_number_in_the_file(tmp_path):
    from medaudit.adapters import read_manifest

    p = tmp_path / "m.csv"
    pd.DataFrame({"image_id": ["a", "b"], "path": ["a.png", "b.png"], "cohort": "c",
                  "label": [1, 2]}).to_csv(p, index=False)
    with pytest.raises(MedauditError) as err:
        read_manifest(p)
    # named by its line in the file (the header is line 1), with the number as written
    assert "(line 3 has 2)" in str(err.value) and "np." not in str(err.value), str(err.value)


def test_the_helpers():
    assert shown(np.float64(0.25)) == "0.25" == quote(np.float64(0.25))
    assert shown(np.bool_(True)) == "True" and shown(np.str_("x")) == "'x'"
    assert quote([np.float64(0.5), np.int64(2)]) == "[0.5, 2]"
