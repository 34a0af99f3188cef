"""A source audit on the simulated paper-000 study (cohort Shenzhen) and a receiving site (Montgomery).

The simulation's parameters (``medaudit.simulate.paper000``) fix the truth on the local
cohort.  For the clinical prompt a model's logit is ``mu + 0.7 d + 0.8 e + 0.35 z + shift``
with ``d, e, z`` standard normal, so each class has variance 0.49 + 0.64 + 0.1225 = 1.2525,
positives centre at ``shift`` and Montgomery's normal controls at ``shift - 1.25 * sep * m``
(``m`` = 1 up to a prompt jitter of SD 0.075 * prompt sensitivity).  Hence, on Montgomery:

* AUROC = Phi(1.25 sep m / sqrt(2 * 1.2525)): sim-chexficient and sim-medsiglip (sep 2.5)
  0.976, sim-biomedclip (1.5) 0.882 (0.86-0.90 over the jitter), sim-openclip (0.35) 0.61;
* Se at tau = Phi((shift - logit(tau)) / sqrt(1.2525)): sim-biomedclip (shift -1.1) at
  tau = 0.2 is Phi(0.256) = 0.60; sim-medsiglip (shift -0.4) at tau = 0.1 is 0.946, its Sp
  Phi((logit(0.1) + 0.4 + 3.125) / 1.119) = 0.88.

The declared claims are chosen from that truth: two hold, one does not, one comparison is
reversed, two stay unresolved at n = 58 + 80 (their true value is the claimed level).
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import yaml
from scipy import stats

N_RESAMPLES = 400
SOURCE_SPEC = {
    "name": "paper000-shenzhen-source", "simulate": "paper000", "primary_prompt": "clinical",
    "cohorts": {"shenzhen": {"role": "primary"}}, "seed": 2026, "n_resamples": N_RESAMPLES,
    "blocks": ["claims", "discrimination"],
    "claims": {"generate": ["reliability"], "declared": [
        {"id": "D01", "model": "sim-chexficient", "metric": "roc_auc", "at_least": 0.85},
        {"id": "D02", "model": "sim-openclip", "metric": "roc_auc", "at_least": 0.85},
        {"id": "D03", "model": "sim-biomedclip", "metric": "roc_auc", "at_least": 0.88},
        {"id": "D04", "model": "sim-openclip", "than": "sim-biomedclip", "metric": "roc_auc"},
        {"id": "D05", "model": "sim-medsiglip", "sensitivity_at_least": 0.8,
         "specificity_at_least": 0.7, "threshold": 0.1},
        {"id": "D06", "model": "sim-biomedclip", "sensitivity_at_least": 0.55, "threshold": 0.2},
        # prevalence-dependent: judged at the site's prevalence (or a declared one)
        {"id": "D07", "model": "sim-chexficient", "metric": "brier_score", "at_most": 0.2},
        # a threshold chosen on the source by a rule: carried as the source's number
        {"id": "D08", "model": "sim-medsiglip", "sensitivity_at_least": 0.9,
         "threshold": {"source": "shenzhen", "rule": "sensitivity", "target_value": 0.9,
                       "design": "fixed"}},
    ]},
}
LOCAL_SPEC = {"name": "montgomery-site", "simulate": "paper000", "primary_prompt": "clinical",
              "cohorts": {"montgomery": {"role": "primary"}}, "seed": 7,
              "n_resamples": N_RESAMPLES}

_VAR = 0.49 + 0.64 + 0.1225


def true_auroc(sep: float, cohort_sep: float = 1.25) -> float:
    """AUROC of a model of separation ``sep`` on normal controls (prompt jitter left out)."""
    return float(stats.norm.cdf(cohort_sep * sep / math.sqrt(2 * _VAR)))


def true_se(shift: float, tau: float) -> float:
    return float(stats.norm.cdf((shift - math.log(tau / (1 - tau))) / math.sqrt(_VAR)))


#: the truth on Montgomery and the verdict it implies (chosen so that n = 138 decides it)
TRUTH = {
    "D01": (true_auroc(2.5), "holds"),
    "D02": (true_auroc(0.35), "does not hold"),
    "D03": (true_auroc(1.5), "unresolved"),
    "D04": (true_auroc(0.35) - true_auroc(1.5), "reversed"),
    "D05": (true_se(-0.4, 0.1), "holds"),
    "D06": (true_se(-1.1, 0.2), "unresolved"),
}


@pytest.fixture(scope="session")
def source_audit(tmp_path_factory) -> Path:
    """The finished source audit folder (Shenzhen), written once per session."""
    import medaudit

    root = tmp_path_factory.mktemp("port-source")
    medaudit.audit(spec=SOURCE_SPEC).write(root / "audit")
    return root / "audit"


@pytest.fixture(scope="session")
def claims_file(source_audit) -> Path:
    """The source audit's claims file, exported beside it."""
    from medaudit.io.claimsfile import export_claims, write_claims_file

    return write_claims_file(export_claims(source_audit), source_audit.parent / "source.claims.json")


@pytest.fixture(scope="session")
def local_spec(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("port-local") / "site.yaml"
    path.write_text(yaml.safe_dump(LOCAL_SPEC, sort_keys=False), encoding="utf-8")
    return path
