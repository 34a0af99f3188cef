"""Spec sections for uncertain labels (paper 001): raw annotations and the label-uncertainty block.

Owned by the labels work (issue 4); :class:`~medaudit.io.spec.AuditSpec` embeds these.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

__all__ = ["AnnotationsSpec", "LabelUncertaintySpec"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class AnnotationsSpec(_Strict):
    """Where the raw annotations are and how they become hard and soft labels (to be extended)."""

    path: str
    format: Literal["long", "crowd"] = "long"


class LabelUncertaintySpec(_Strict):
    """Settings of the label-uncertainty block (to be extended)."""

    n_resamples: int = 1000
