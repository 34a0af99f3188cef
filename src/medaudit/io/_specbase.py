"""What every YAML spec section shares: strict frozen models and the (0, 1) check.

Kept apart from :mod:`medaudit.io.spec` so the section modules it embeds (labels,
agreement, estimators) and the training spec can use it without a circular import.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

__all__ = ["Strict", "fraction"]


class Strict(BaseModel):
    """Unknown keys are errors (with a suggestion); a validated spec never changes."""

    model_config = ConfigDict(extra="forbid", frozen=True)


def fraction(v: float, name: str) -> float:
    """``v`` as a float strictly between 0 and 1, or a ValueError naming ``name``."""
    if not 0.0 < float(v) < 1.0:
        raise ValueError(f"{name} must lie strictly between 0 and 1; got {v!r}")
    return float(v)
