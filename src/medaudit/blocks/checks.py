"""Checks of a spec's names against the score table (what each block's ``check`` reports)."""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from typing import Any

__all__ = ["unknown"]


def unknown(kind: str, names: Iterable[Any], known: Iterable[Any], where: str) -> list[str]:
    """One line per name in ``names`` that ``known`` lacks, with the closest known name."""
    known = list(known)
    out = []
    for n in names:
        if n not in known:
            close = difflib.get_close_matches(str(n), [str(k) for k in known], n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            out.append(f"  - {where}: unknown {kind} {n!r}{hint}; the table has {sorted(known)}")
    return out
