"""Spec sections for reference agreement (paper 002): the judgment table and the error-structure block.

Owned by the judgment/error-structure work (issue 5); :class:`~medaudit.io.spec.AuditSpec` embeds these.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

__all__ = ["JudgmentsSpec", "ErrorStructureSpec"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class JudgmentsSpec(_Strict):
    """Where the judgment table comes from (a file, or the embedded simulated study); to be extended."""

    path: str | None = None
    simulate: Literal["paper002"] | None = None


class ErrorStructureSpec(_Strict):
    """Settings of the error-structure block (to be extended)."""

    n_resamples: int = 10_000
