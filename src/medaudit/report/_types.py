"""Shared types of the report layer (figures are drawn from block tables only)."""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

__all__ = ["RenderedFigure", "Tables"]

#: block name -> table name -> tidy DataFrame (exactly what the blocks returned, or what
#: ``results.json`` holds for a finished audit)
Tables = dict[str, dict[str, pd.DataFrame]]


@dataclass(frozen=True)
class RenderedFigure:
    """One figure, rendered to PNG and SVG, with the block it belongs to."""

    name: str  # file stem, e.g. "fig1_discrimination"
    block: str  # the block whose section shows it
    title: str
    caption: str  # what is drawn and from which table (specification, design, B)
    png: bytes = field(repr=False)
    svg: str = field(repr=False)
