"""Display formatting: the one place in the report layer that rounds.

Every function takes a value exactly as a block table holds it, or as
``results.json`` gives it back (``None`` for NaN, ``"inf"`` for infinity, an
integral float where pandas widened an integer column), and returns the same text
for both, so a report rendered in memory and one re-rendered from ``results.json``
are byte-identical.

Examples
--------
>>> fmt_estimate(0.91234)
'0.912'
>>> fmt_ci(0.91234, 0.8891, 0.93349)
'0.912 [0.889, 0.933]'
>>> fmt_p(0.00042), fmt_p(0.0421), fmt_p(None)
('<0.001', '0.042', '—')
>>> fmt_pct(0.4375), fmt_pct(12.34, already_percent=True)
('43.8%', '12.3%')
>>> full_precision(0.1 + 0.2), full_precision(100.0), full_precision(float("nan"))
('0.30000000000000004', '100', '')

A value that rounds to zero prints without a sign, whatever side of zero it lies on:

>>> fmt_estimate(-0.0001), fmt_ci(-0.0002, -0.0004, 0.01), fmt_signed(-0.0002), fmt_signed(0.0123)
('0.000', '0.000 [0.000, 0.010]', '0.000', '+0.012')
>>> fmt_grid(-0.0), fmt_pct(-0.00001)
('0', '0.0%')
"""

from __future__ import annotations

import math
import numbers
import re
from typing import Any

import numpy as np

__all__ = ["MISSING", "is_missing", "as_float", "full_precision", "fmt_estimate", "fmt_signed", "fmt_ci",
           "fmt_interval", "fmt_p", "fmt_pct", "fmt_int", "fmt_grid", "fmt_cell", "column_kind",
           "md_text", "md_table"]

#: how a missing or undefined value is shown
MISSING = "—"

_DIGITS = 3
_INFINITIES = {"inf": math.inf, "+inf": math.inf, "-inf": -math.inf, "Infinity": math.inf,
               "-Infinity": -math.inf}


def is_missing(v: Any) -> bool:
    """``None``, NaN, ``pd.NA`` and ``pd.NaT`` are missing; strings never are."""
    if v is None:
        return True
    if isinstance(v, str):
        return False
    if isinstance(v, float):
        return math.isnan(v)
    try:  # pd.NA, NaT, numpy floats
        import pandas as pd

        res = pd.isna(v)
    except (TypeError, ValueError, ImportError):  # pragma: no cover - exotic objects
        return False
    return isinstance(res, bool | np.bool_) and bool(res)


def as_float(v: Any) -> float | None:
    """A finite or infinite float for numbers (and ``"inf"`` strings); ``None`` otherwise."""
    if is_missing(v) or isinstance(v, bool | np.bool_):
        return None
    if isinstance(v, str):
        return _INFINITIES.get(v.strip())
    if isinstance(v, numbers.Real):
        return float(v)
    try:  # numpy scalars that are not registered as numbers.Real
        return float(v)
    except (TypeError, ValueError):
        return None


def full_precision(v: Any) -> str:
    """Shortest text that round-trips the stored value (integral floats as integers)."""
    f = as_float(v)
    if f is None:
        if is_missing(v):
            return ""
        if isinstance(v, bool | np.bool_):
            return "true" if bool(v) else "false"
        return str(v)
    if math.isinf(f):
        return "inf" if f > 0 else "-inf"
    if f.is_integer() and abs(f) < 2.0 ** 53:
        return str(int(f))
    return repr(f)


def _num(f: float, digits: int) -> str:
    if math.isinf(f):
        return "∞" if f > 0 else "-∞"
    text = f"{f:.{digits}f}"
    # "-0.000" reads as a sign where there is none
    if text.startswith("-") and float(text) == 0.0:
        text = text[1:]
    return text


def fmt_estimate(v: Any, digits: int = _DIGITS) -> str:
    """A point estimate with ``digits`` decimals; :data:`MISSING` when undefined."""
    f = as_float(v)
    return MISSING if f is None else _num(f, digits)


def fmt_signed(v: Any, digits: int = _DIGITS) -> str:
    """A difference with its sign (``+0.012``, ``-0.012``); ``0.000`` when it rounds to zero."""
    f = as_float(v)
    if f is None:
        return MISSING
    text = _num(f, digits)
    return text if text.startswith("-") or float(text) == 0.0 or math.isinf(f) else "+" + text


def fmt_interval(low: Any, high: Any, digits: int = _DIGITS) -> str:
    """``[0.889, 0.933]``; empty when both ends are undefined."""
    if as_float(low) is None and as_float(high) is None:
        return ""
    return f"[{fmt_estimate(low, digits)}, {fmt_estimate(high, digits)}]"


def fmt_ci(estimate: Any, low: Any, high: Any, digits: int = _DIGITS) -> str:
    """``0.912 [0.889, 0.933]``; the estimate alone when the interval is undefined."""
    interval = fmt_interval(low, high, digits)
    return fmt_estimate(estimate, digits) + (f" {interval}" if interval else "")


def fmt_p(v: Any) -> str:
    """A p-value: ``<0.001`` below one in a thousand, else three decimals."""
    f = as_float(v)
    if f is None:
        return MISSING
    if f < 0.001:
        return "<0.001"
    return f"{f:.3f}"


def fmt_p_floor(v: Any, n_resamples: Any) -> str:
    """A resampling p-value, ``≤ 0.001`` at its floor ``1 / (1 + B)``.

    ``(1 + b) / (1 + B)`` cannot go below ``1 / (1 + B)``: there it says that no resample
    was as extreme, i.e. p is at most that, not that it is that.  Elsewhere as :func:`fmt_p`.

    >>> fmt_p_floor(1 / 1000, 999), fmt_p_floor(1 / 10001, 10000), fmt_p_floor(2 / 1000, 999)
    ('≤ 0.001', '≤ 0.0001', '0.002')
    >>> fmt_p_floor(1e-5, 0)  # no resampling (an approximation): as fmt_p
    '<0.001'
    """
    f, b = as_float(v), as_float(n_resamples)
    if f is not None and b is not None and b >= 1 and 0 < f <= 1.0 / (1.0 + b) * (1 + 1e-12):
        # two significant digits, rounded up: a bound must not read below what it bounds
        digits = 1 - math.floor(math.log10(f))
        up = math.ceil(f * 10.0**digits - 1e-9) / 10.0**digits
        return "≤ " + f"{up:.{digits}f}".rstrip("0").rstrip(".")
    return fmt_p(v)


def fmt_pct(v: Any, digits: int = 1, *, already_percent: bool = False) -> str:
    """A proportion (or, with ``already_percent``, a percentage) as ``43.8%``."""
    f = as_float(v)
    if f is None:
        return MISSING
    return _num(f if already_percent else 100.0 * f, digits) + "%"


def fmt_int(v: Any) -> str:
    """A count; non-integral values fall back to :func:`fmt_estimate`."""
    f = as_float(v)
    if f is None:
        return MISSING
    if math.isfinite(f) and f.is_integer():
        return str(int(f))
    return fmt_estimate(f)


def fmt_grid(v: Any) -> str:
    """A declared setting (prevalence, target value): shortest form, ``0.1`` not ``0.100``."""
    f = as_float(v)
    if f is None:
        return MISSING if is_missing(v) else str(v)
    return f"{f + 0.0:.6g}"  # + 0.0 turns -0.0 into 0.0


_P_COLUMNS = ("pvalue", "pvalue_adj", "pvalue_holm", "perm_pvalue", "p", "p_adj")
_INT_COLUMNS = ("n", "n_pos", "n_neg", "count", "k", "n_degenerate", "n_resamples", "seed", "df",
                "n_true_negative", "n_retained", "n_total", "n_permutations", "bin", "n_seeds",
                "n_images", "entry")
_GRID_COLUMNS = ("prevalence", "target_value", "primary", "coverage_target", "alpha")
_PCT_COLUMNS = ("share_percent",)


def column_kind(name: str) -> str:
    """How a table column is displayed: ``p``, ``int``, ``grid``, ``pct`` or ``num``."""
    if name in _P_COLUMNS or "pvalue" in name:  # pvalue_adj, ks_pvalue, bootstrap_pvalue, ...
        return "p"
    if name in _INT_COLUMNS or name.startswith("n_") or name.endswith(("seed", "ddof", "_count")):
        return "int"
    if name in _GRID_COLUMNS:
        return "grid"
    if name in _PCT_COLUMNS:
        return "pct"
    return "num"


def fmt_cell(v: Any, column: str) -> tuple[str, str, bool]:
    """``(display text, full-precision text, is_number)`` of one table cell."""
    if is_missing(v):
        return MISSING, "", False
    if isinstance(v, bool | np.bool_):
        return ("yes" if bool(v) else "no"), full_precision(v), False
    f = as_float(v)
    if f is None:
        return str(v), str(v), False
    kind = column_kind(column)
    text = {"p": fmt_p, "int": fmt_int, "grid": fmt_grid,
            "pct": lambda x: fmt_pct(x, already_percent=True)}.get(kind, fmt_estimate)(f)
    return text, full_precision(f), True


_TAG_OPEN = re.compile(r"<(?=[A-Za-z/!?])")


def md_text(v: Any) -> str:
    """Text for a Markdown file with every ``<`` that could open an HTML tag written
    ``&lt;``: Markdown viewers pass raw HTML through, so a model named
    ``<img src=x onerror=...>`` would run there.  ``Sp < 0.05`` stays as it is (no tag
    starts with a space), and so do the line breaks medaudit writes as ``<br>``; ``](``
    is written ``]\\(``, so no name becomes a link or an image."""
    # "](" escaped too: a name written as a Markdown link or image (![x](https://...)) would
    # make a viewer fetch or offer that address
    return _TAG_OPEN.sub("&lt;", str(v)).replace("&lt;br>", "<br>").replace("](", "]\\(")


def md_table(df: Any) -> list[str]:
    """A pandas DataFrame of display strings as Markdown table lines (``|`` escaped, and
    what could open an HTML tag: :func:`md_text`)."""
    if df.empty:
        return ["(none)"]
    cols = [md_text(c).replace("|", "\\|") for c in df.columns]
    out = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for r in df.itertuples(index=False):
        out.append("| " + " | ".join("" if is_missing(v) else md_text(v).replace("|", "\\|")
                                     for v in r) + " |")
    return out
