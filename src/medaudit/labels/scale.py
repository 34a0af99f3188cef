"""The declared rating scale of an annotation table (numbers, or codes mapped to numbers / hedge).

Kept apart from :mod:`medaudit.labels.annotations` so that the aggregation rules
(:mod:`medaudit.labels.aggregate`) and the table both build on it without importing each
other.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from medaudit.exceptions import SchemaError
from medaudit.io.schema import row_place, row_places

__all__ = ["RatingScale", "HEDGE", "code_key"]

#: the code value that marks a hedged / uncertain rating
HEDGE = "hedge"


def _plain(value: Any) -> Any:
    """A numpy scalar as its Python value, so messages show ``7``, not ``np.int64(7)``."""
    return value.item() if isinstance(value, np.generic) else value


def code_key(value: Any) -> str:
    """The text under which a raw rating is looked up in ``codes``.

    Numbers compare by value (1, 1.0 and "1" are the same code), text by its stripped
    form ("YES" is not "yes": codes are case-sensitive).

    Examples
    --------
    >>> code_key(1.0), code_key("1"), code_key(" YES "), code_key(-1)
    ('1', '1', 'YES', '-1')
    """
    if isinstance(value, (bool, np.bool_)):
        return str(value)
    if isinstance(value, (int, float, np.integer, np.floating)):
        f = float(value)
    else:
        text = str(value).strip()
        try:
            f = float(text)
        except ValueError:
            return text
    if math.isfinite(f) and f == int(f):
        return str(int(f))
    return repr(f)


@dataclass(frozen=True)
class RatingScale:
    """A declared rating scale: numbers in ``[low, high]``, or codes mapping raw values.

    ``codes`` maps a raw rating (text or number, see :func:`code_key`) to a number on
    the scale or to ``"hedge"``.  Build with :meth:`numeric`, :meth:`from_codes` or
    :meth:`from_spec`.
    """

    low: float
    high: float
    codes: Mapping[str, float | str] | None = None

    def __post_init__(self) -> None:
        lo, hi = float(self.low), float(self.high)
        if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
            raise SchemaError(f"rating scale needs finite min < max; got [{self.low}, {self.high}].")
        if self.codes is not None:
            for k, v in self.codes.items():
                if v != HEDGE and not lo <= float(v) <= hi:
                    raise SchemaError(f"scale code {k!r} maps to {v!r}, outside [{lo}, {hi}].")

    @classmethod
    def numeric(cls, low: float, high: float) -> RatingScale:
        """Numbers between ``low`` and ``high`` (inclusive)."""
        return cls(float(low), float(high))

    @classmethod
    def from_codes(cls, codes: Mapping[Any, float | str], *, low: float | None = None,
                   high: float | None = None) -> RatingScale:
        """Codes such as ``{"YES": 1, "NO": 0, "HEDGE": "hedge"}``; min/max default to the
        extreme numeric codes."""
        norm: dict[str, float | str] = {}
        for k, v in codes.items():
            key = code_key(k)
            if key in norm:
                raise SchemaError(f"scale codes name {key!r} twice (after normalising {k!r}).")
            norm[key] = HEDGE if v == HEDGE else float(v)
        nums = [float(v) for v in norm.values() if v != HEDGE]
        if not nums:
            raise SchemaError("scale codes need at least one numeric code (not all 'hedge').")
        return cls(min(nums) if low is None else float(low),
                   max(nums) if high is None else float(high), norm)

    @classmethod
    def from_spec(cls, spec: Any) -> RatingScale:
        """From :class:`~medaudit.labels.spec.RatingScaleSpec`."""
        if spec.codes is not None:
            return cls.from_codes(spec.codes, low=spec.min, high=spec.max)
        return cls.numeric(spec.min, spec.max)

    def describe(self) -> str:
        if self.codes is None:
            return f"numbers in [{self.low:g}, {self.high:g}]"
        return "codes " + ", ".join(f"{k!r}->{v}" for k, v in self.codes.items())

    def encode(self, raw: pd.Series, *, source: str, column: str
               ) -> tuple[np.ndarray, np.ndarray]:
        """Numeric values (NaN for hedged) and the hedged mask; off-scale ratings raise."""
        if self.codes is None:
            val = pd.to_numeric(raw, errors="coerce").to_numpy(dtype=np.float64)
            bad = ~np.isfinite(val) | (val < self.low) | (val > self.high)
            hedged = np.zeros(val.size, dtype=bool)
        else:
            keys = [code_key(v) for v in raw.tolist()]
            mapped = [self.codes.get(k) for k in keys]
            hedged = np.array([m == HEDGE for m in mapped], dtype=bool)
            bad = np.array([m is None for m in mapped], dtype=bool)
            val = np.array([np.nan if (m is None or m == HEDGE) else float(m) for m in mapped])
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            seen = sorted({repr(v) for v in raw[bad].tolist()})[:5]
            raise SchemaError(
                f"{source}: column {column!r} has rating(s) outside the declared scale "
                f"({self.describe()}) at {row_places(raw, bad)} ({_plain(raw.iloc[i])!r} at "
                f"{row_place(raw, i)}; values seen: {', '.join(seen)}). Fix the data or "
                "declare the scale (annotations.scale: min/max or codes) - medaudit does not "
                "coerce or drop ratings.")
        return val, hedged
