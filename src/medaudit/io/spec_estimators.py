"""Spec section for the reliability-estimator block (paper 002, M2.5-M2.12).

Owned by the estimator work (issue 5); :class:`~medaudit.io.spec.AuditSpec` embeds it.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

__all__ = ["AgreementSpec"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class AgreementSpec(_Strict):
    """Settings of the agreement (estimator) block (to be extended)."""

    budgets: list[int] = [0, 25, 50, 100, 200]
