"""The real run: a source audit of the TB ResNet-50s on Shenzhen, its claims ported to Montgomery.

``examples/port_kwang311_source.yaml`` and ``examples/port_kwang311_site.yaml`` run by the
three commands their header gives.  Witnesses: the pROC AUROCs of the seed ensembles
committed in ``tests/reference/kwang311_pROC.csv`` (R + pROC on the same files), for the
source and for the local estimates; the sensitivity at the carried τ counted by hand from
the Montgomery file; the verdict rule and the half-width sample size worked out here.
Skipped only when the data folder is absent.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import jsonschema
import pandas as pd
import pytest
from scipy import stats

from medaudit.cli.main import main

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT.parent / "shared" / "data" / "tb_cross_cohort_predictions_kwang311"
REF = ROOT / "tests" / "reference" / "kwang311_pROC.csv"

pytestmark = pytest.mark.skipif(
    not DATA.is_dir(), reason=f"the kwang311 TB predictions are not at {DATA} (../shared/data "
                              "beside the checkout); the real port example needs them")


@pytest.fixture(scope="module")
def ported(tmp_path_factory):
    d = tmp_path_factory.mktemp("kwang-port")
    assert main(["audit", str(ROOT / "examples" / "port_kwang311_source.yaml"), "--out",
                 str(d / "source"), "--quiet"]) == 0
    assert main(["claims", "export", str(d / "source"), "--out", str(d / "kwang.claims.json"),
                 "--quiet"]) == 0
    assert main(["port", str(d / "kwang.claims.json"), str(ROOT / "examples" / "port_kwang311_site.yaml"),
                 "--out", str(d / "port"), "--quiet"]) == 0
    schema = json.loads((ROOT / "docs" / "claims.schema.json").read_text(encoding="utf-8"))
    for f in (d / "kwang.claims.json", d / "port" / "source.claims.json"):
        jsonschema.Draft202012Validator(schema).validate(json.loads(f.read_text(encoding="utf-8")))
    return pd.read_csv(d / "port" / "port__claims.csv", keep_default_na=False,
                       na_values=[""]).set_index("claim_id")


def _proc(cohort: str, model: str) -> float:
    ref = pd.read_csv(REF, comment="#")
    hit = ref[(ref["cohort"] == cohort) & (ref["kind"] == "ensemble") & (ref["a"] == model)
              & (ref["quantity"] == "auc")]
    return float(hit["value"].iloc[0])


def test_estimates_are_the_pROC_values(ported):
    for cid, model in (("K01", "Shenzhen"), ("K02", "TBX11K")):
        assert ported.loc[cid, "source_estimate"] == pytest.approx(_proc("Shenzhen", model), abs=1e-12)
        assert ported.loc[cid, "local_estimate"] == pytest.approx(_proc("Montgomery", model), abs=1e-12)
    assert ported.loc["K03", "local_estimate"] == pytest.approx(
        _proc("Montgomery", "Shenzhen") - _proc("Montgomery", "Qatar"), abs=1e-12)


def test_the_source_threshold_is_carried_and_se_counted_by_hand(ported):
    m = pd.read_csv(DATA / "resnet50_full_test-Montgomery.csv")
    ens = m[[c for c in m.columns if c.endswith("_Shenzhen")]].mean(axis=1)
    r = ported.loc["K04"]
    tau = r["threshold"]
    assert r["threshold_origin"].startswith("source τ (chosen on shenzhen by sensitivity)")
    assert r["local_estimate"] == pytest.approx((ens[m["label"] == 1] >= tau).mean(), abs=1e-15)
    assert r["verdict"] == "does not hold"  # Se 6/12 at the Shenzhen τ: the claimed 0.8 fails


def test_verdicts_follow_the_local_intervals(ported):
    judged = ported[ported["verdict"] != "not assessable here"]
    assert len(judged) == len(ported) and (ported["local_n_pos"] == 12).all()
    for cid, r in judged.iterrows():
        lo, hi, v = r["local_ci_low"], r["local_ci_high"], r["level"]
        if r["kind"] in ("comparison", "ranking"):
            want = "holds" if lo > 0 else "reversed" if hi < 0 else "unresolved"
        else:
            want = "holds" if lo >= v else "does not hold" if hi < v else "unresolved"
        assert r["verdict"] == want, cid


def test_unresolved_sample_sizes_by_hand(ported):
    unresolved = ported[ported["verdict"] == "unresolved"]
    assert len(unresolved) >= 1
    z, zb = stats.norm.ppf(0.975), stats.norm.ppf(0.8)
    for _, r in unresolved.iterrows():
        est, lo, hi, v = r["local_estimate"], r["local_ci_low"], r["local_ci_high"], r["level"]
        half = (est - lo) if est > v else (hi - est)
        f = (half / abs(est - v)) ** 2 * ((z + zb) / z) ** 2
        assert r["resolve_n_pos"] == math.ceil(f * 12 - 1e-9)
        assert r["resolve_n_neg"] == math.ceil(f * 16 - 1e-9)
