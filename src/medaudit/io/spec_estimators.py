"""Spec section for the reliability-estimator block (paper 002, M2.4-M2.10).

Owned by the estimator work (issue 5); :class:`~medaudit.io.spec.AuditSpec` embeds it.
Defaults reproduce the paper's design: all ten estimators, budgets {0, 25, 50, 100, 200},
10 repeats with seeds 42..51, GLMM with 3,000 SVI steps, the strict selector on Set B,
10 ECE bins, the 95% Beta-Binomial interval audited on cells with ``N_test >= 20``, and
10,000 institution-cluster bootstrap replicates of the family Brier gap.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator, model_validator

from medaudit.io._specbase import Strict as _Strict
from medaudit.io._specbase import fraction as _fraction

__all__ = ["AgreementSpec", "ESTIMATOR_KEYS", "SET_B_KEYS"]

ESTIMATOR_KEYS = ("naive", "additive", "hdcal", "hdcal_weighted", "glmm", "has", "has_fixed_tau",
                  "has_no_offset", "target_only", "beta_binomial")
SET_B_KEYS = ("naive", "additive", "hdcal", "hdcal_weighted", "glmm", "target_only",
              "beta_binomial")
Estimator = Literal["naive", "additive", "hdcal", "hdcal_weighted", "glmm", "has",
                    "has_fixed_tau", "has_no_offset", "target_only", "beta_binomial"]




class AgreementSpec(_Strict):
    """Settings of the agreement (estimator) block."""

    #: protocol whose verdicts the estimators are compared on (paper: narrative)
    protocol: str = "narrative"
    #: models to run (None = every model of the judgment table)
    models: list[str] | None = None
    #: Set A, fitted on every leave-one-institution-out fold
    estimators: list[Estimator] = Field(default_factory=lambda: list(ESTIMATOR_KEYS), min_length=1)
    #: label budgets in finding-level judgments (nested within a repeat)
    budgets: list[int] = Field(default_factory=lambda: [0, 25, 50, 100, 200], min_length=1)
    #: repeat r draws its shots (and seeds its GLMM) with first_seed + r (paper: 42..51)
    repeats: int = Field(10, ge=1)
    first_seed: int = Field(42, ge=0)
    #: fit the NumPyro GLMM (optional extra); false drops it from Set A and Set B
    glmm: bool = True
    glmm_steps: int = Field(3000, ge=1)
    glmm_step_size: float = Field(0.02, gt=0.0)
    #: run the strict institution-excluded selector on every non-zero budget
    selection: bool = True
    #: Set B in its fixed tie-break order (must contain naive, the gate)
    candidates: list[Estimator] = Field(default_factory=lambda: list(SET_B_KEYS), min_length=1)
    #: equal-width ECE bins
    n_bins: int = Field(10, ge=1)
    #: Beta-Binomial posterior-predictive interval level and the N_test eligibility floor
    interval_level: float = 0.95
    min_test: int = Field(20, ge=1)
    #: institution-cluster bootstrap of the family Brier gap (hdcal - beta_binomial)
    n_resamples: int = Field(10_000, ge=10)
    gap_estimators: list[Estimator] = Field(default_factory=lambda: ["hdcal", "beta_binomial"],
                                            min_length=2, max_length=2)
    #: M2.12: refit the fixed policies under each uncertain-label policy (exclude, negative,
    #: positive) and count where the within-family comparisons hold (table
    #: ``uncertain_sensitivity``); the primary analysis keeps ``judgments.uncertain``
    uncertain_sensitivity: bool = False

    @field_validator("budgets")
    @classmethod
    def _budgets(cls, v: list[int]) -> list[int]:
        if any(b < 0 for b in v) or len(set(v)) != len(v):
            raise ValueError(f"budgets must be distinct non-negative integers; got {v}")
        return sorted(v)

    @field_validator("interval_level")
    @classmethod
    def _level(cls, v: float) -> float:
        return _fraction(v, "interval_level")

    @model_validator(mode="after")
    def _consistent(self) -> AgreementSpec:
        for name in ("estimators", "candidates"):
            vals = getattr(self, name)
            if len(set(vals)) != len(vals):
                raise ValueError(f"agreement.{name} repeat a name: {vals}")
        if self.selection:
            if "naive" not in self.candidates:
                raise ValueError("agreement.candidates must include 'naive' (the gate baseline)")
            has = [c for c in self.candidates if c.startswith("has")]
            if has:
                raise ValueError(f"agreement.candidates cannot include {has}: the HAS estimators "
                                 "need two sources and a development fold has one (Set B)")
            missing = [c for c in self.candidates if c not in self.estimators
                       and not (c == "glmm" and not self.glmm)]
            if missing:
                raise ValueError(f"agreement.candidates {missing} must also be in "
                                 "agreement.estimators (the choice is scored as that fixed policy)")
        return self

    def active_estimators(self) -> list[str]:
        """Set A as run (the GLMM dropped when ``glmm`` is false)."""
        return [e for e in self.estimators if self.glmm or e != "glmm"]

    def active_candidates(self) -> list[str]:
        """Set B as run (the GLMM dropped when ``glmm`` is false)."""
        return [c for c in self.candidates if self.glmm or c != "glmm"]
