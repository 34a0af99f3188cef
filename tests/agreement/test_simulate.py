"""The simulated paper-002 judgment table: contract, determinism, planted error structure."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from medaudit.agreement.judgments import JUDGMENT_COLUMNS, validate_judgments
from medaudit.exceptions import MedauditError
from medaudit.simulate import FINDINGS, SIM_RATES, simulate_paper002


@pytest.fixture(scope="module")
def raw() -> pd.DataFrame:
    return simulate_paper002(rng=7, scale=0.2)


def test_columns_and_contract(raw):
    assert set(JUDGMENT_COLUMNS) <= set(raw.columns) and {"logit_yes", "logit_no"} <= set(raw.columns)
    assert sorted(raw["institution"].unique()) == ["mimic", "openi", "padchest"]
    assert sorted(raw["finding"].unique()) == sorted(FINDINGS)
    ev, report = validate_judgments(raw, source="sim")
    assert report.step("parse").rows_removed > 0  # some unparseable narrative responses
    assert report.step("uncertain").rows_removed > 0  # uncertain MIMIC labels excluded
    assert not raw.duplicated(["study_id", "model", "protocol", "finding"]).any()
    binary = raw[raw["protocol"] == "binary"]
    assert binary["logit_yes"].notna().all()
    yes = (binary["logit_yes"] > binary["logit_no"]).to_numpy()
    assert np.array_equal(yes, (binary["prediction"] == "present").to_numpy())


def test_deterministic_in_rng():
    a = simulate_paper002(rng=3, scale=0.05)
    b = simulate_paper002(rng=3, scale=0.05)
    pd.testing.assert_frame_equal(a, b)
    c = simulate_paper002(rng=4, scale=0.05)
    assert not a["prediction"].equals(c["prediction"])


def test_planted_error_structure(raw):
    ev, _ = validate_judgments(raw, source="sim")
    nar = ev[ev["protocol"] == "narrative"]
    med_pad = nar[(nar["model"] == "medgemma") & (nar["institution"] == "padchest")]
    assert (med_pad["prediction"] == 0).all()  # degenerate deployment: never "present"
    che_pad = nar[(nar["model"] == "chexagent") & (nar["institution"] == "padchest")
                  & (nar["reference"] == 1) & (nar["finding"] != "cardiomegaly")]
    assert (che_pad["prediction"] == 0).all()  # FNR 1 on five findings
    neg = nar[nar["reference"] == 0]
    fpr = neg.groupby(["model", "institution"])["prediction"].mean()
    for m in ("medgemma", "chexagent"):
        assert fpr[(m, "mimic")] > 2 * fpr[(m, "openi")]  # FPR elevated at MIMIC
    # the planted FPR of atelectasis (study effect aside) is recovered roughly
    atel = neg[(neg["model"] == "chexagent") & (neg["institution"] == "mimic")
               & (neg["finding"] == "atelectasis")]["prediction"].mean()
    assert abs(atel - SIM_RATES[("chexagent", "mimic")][0][0]) < 0.12


def test_scale_and_degenerate_option():
    small = simulate_paper002(rng=0, scale=0.01, include_degenerate=True, protocols=("narrative",))
    assert set(small["model"]) == {"medgemma", "chexagent", "llava-med"}
    llava = small[(small["model"] == "llava-med") & (small["prediction"] != "")]
    assert (llava["prediction"] == "absent").all()
    with pytest.raises(MedauditError, match="scale"):
        simulate_paper002(rng=0, scale=0.0)
    with pytest.raises(MedauditError, match="protocols"):
        simulate_paper002(rng=0, protocols=("chat",))
