"""Words for messages and pages: a count with its noun.

One home for ``1 claim`` / ``2 claims``, used by the CLI's lines, the defaults' report of
what a table holds and the report pages.
"""

from __future__ import annotations

__all__ = ["plural"]


def plural(n: int, word: str, plural: str | None = None, *, grouped: bool = False) -> str:
    """``n`` and ``word``, in the plural unless ``n`` is 1.

    Parameters
    ----------
    n : int
    word : str
        The singular noun.
    plural : str, optional
        The plural where it is not ``word + "s"``.
    grouped : bool, default=False
        Thousands separated by commas (``12,200 images``).

    Examples
    --------
    >>> plural(1, "claim"), plural(2, "claim"), plural(0, "entry", "entries")
    ('1 claim', '2 claims', '0 entries')
    >>> plural(12200, "image", grouped=True)
    '12,200 images'
    """
    shown = f"{n:,}" if grouped else f"{n}"
    return f"{shown} {word if n == 1 else (plural or word + 's')}"
