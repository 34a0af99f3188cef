"""Quoting user-supplied values in error messages without letting them take over the message.

An error message that quotes what the user wrote (a key, a cell, a list of cohorts) must stay
one readable line however large or deep that value is: a 10 MB string must not become a
10 MB message, and a YAML alias bomb (a list that refers to itself nine levels deep) must not
be expanded by an f-string.  Every message in ``medaudit.io`` that quotes a user value goes
through :func:`quote` (one value) or :func:`shorten` (a finished piece of text).

:func:`quote` is built on :class:`reprlib.Repr`, which visits at most ``maxlevel`` levels and
``maxlist`` items per level, so its cost is bounded whatever the object; NumPy scalars are shown
as plain numbers (``0.5``, not ``np.float64(0.5)``).
"""

from __future__ import annotations

import reprlib
from typing import Any

__all__ = ["quote", "shorten", "one_line", "MAX_QUOTED"]

#: the most characters a quoted value takes in a message (an ellipsis and the full length follow)
MAX_QUOTED = 80


class _BoundedRepr(reprlib.Repr):
    def __init__(self, limit: int) -> None:
        super().__init__()
        self.maxlevel = 3
        self.maxlist = self.maxtuple = self.maxset = self.maxfrozenset = self.maxdeque = 10
        self.maxdict = 10
        self.maxstring = self.maxother = self.maxlong = max(limit, 1)

    def repr1(self, x: Any, level: int) -> str:
        item = getattr(x, "item", None)
        if item is not None and type(x).__module__ == "numpy" and getattr(x, "ndim", 1) == 0:
            x = item()  # np.float64(0.5) -> 0.5: messages show the number, not NumPy's repr
        return super().repr1(x, level)

    def repr_str(self, x: str, level: int) -> str:
        # reprlib cuts the middle out of a long string; keep its start, which is what a reader
        # recognises, and say how long it really was
        if len(x) <= self.maxstring:
            return repr(x)
        return repr(x[: self.maxstring]) + f"… ({len(x):,} characters)"


def quote(value: Any, *, limit: int = MAX_QUOTED) -> str:
    """A short ``repr`` of ``value`` for an error message (bounded time and length).

    Parameters
    ----------
    value : object
        What the user supplied (a string, number, list, mapping, ...).
    limit : int, default=80
        Most characters of a string shown; containers show at most 10 items per level and
        3 levels.  The result never exceeds ``2 * limit + 40`` characters.

    Returns
    -------
    str
        The quoted value; a cut string ends in ``… (N characters)``, a cut container in ``...``.

    Examples
    --------
    >>> quote("label_soft")
    "'label_soft'"
    >>> quote("x" * 1000, limit=5)
    "'xxxxx'… (1,000 characters)"
    >>> quote(list(range(100)))
    '[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, ...]'
    >>> import numpy as np
    >>> quote(np.float64(0.5))
    '0.5'
    """
    text = _BoundedRepr(limit).repr(value)
    return shorten(text, limit=2 * limit + 40)


def shorten(text: str, *, limit: int = 500) -> str:
    """Cut ``text`` to at most ``limit`` characters, saying how much was left out.

    Examples
    --------
    >>> shorten("abcdef", limit=4)
    'abcd… (2 more characters)'
    >>> shorten("short")
    'short'
    """
    text = str(text)
    if len(text) <= limit:
        return text
    return text[:limit] + f"… ({len(text) - limit:,} more characters)"


def one_line(text: str, *, limit: int = 500) -> str:
    """``text`` on one line (line breaks become ``' / '``), cut to ``limit`` characters.

    Examples
    --------
    >>> one_line("first\\n  second\\n")
    'first / second'
    """
    parts = [p.strip() for p in str(text).splitlines()]
    return shorten(" / ".join(p for p in parts if p), limit=limit)
