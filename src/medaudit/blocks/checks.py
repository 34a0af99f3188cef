"""Checks of a spec's names against the score table (what each block's ``check`` reports)."""

from __future__ import annotations

import difflib
import unicodedata
from collections.abc import Iterable
from typing import Any

from medaudit.io.messages import quote

__all__ = ["unknown", "DeclaredCohorts"]


class DeclaredCohorts(list):
    """The spec's declared cohorts (a list), knowing which cohorts the score table has.

    A block checks its cohort names against the *declared* cohorts; a name the table has
    but the spec does not declare gets "add it under `cohorts:`" instead of a wrong hint.
    """

    def __init__(self, declared: Iterable[str], *, in_table: Iterable[str] = ()):
        super().__init__(declared)
        self.in_table = set(in_table)


def unknown(kind: str, names: Iterable[Any], known: Iterable[Any], where: str) -> list[str]:
    """One line per name in ``names`` that ``known`` lacks, with the closest known name."""
    declared = isinstance(known, DeclaredCohorts)
    known_list = list(known)
    out = []
    for n in names:
        if n in known_list:
            continue
        if declared and n in known.in_table:
            out.append(f"  - {where}: cohort {quote(n)} is in the table but not declared under "
                       f"`cohorts:`; add it there (declared: {quote(sorted(known_list))})")
            continue
        text = [k for k in known_list if str(k) == str(n)]
        if text:  # 0 and '0': a column (or value) named by a number on one side, text on the other
            out.append(f"  - {where}: {kind} {n!r} is {'text' if isinstance(n, str) else 'a number'}"
                       f", the table's {text[0]!r} {'a number' if isinstance(n, str) else 'text'}; "
                       "names are text: name a DataFrame's columns with text "
                       "(df.columns = df.columns.map(str))")
            continue
        same = [k for k in known_list if unicodedata.normalize("NFC", str(k))
                == unicodedata.normalize("NFC", str(n))]
        if same:  # 'é' as one code point in one, 'e' + combining accent in the other
            out.append(f"  - {where}: {kind} {quote(n)} is written with other Unicode code points "
                       f"than the table's {quote(same[0])} (they look alike but differ: one "
                       "precomposed, one with combining accents); write both the same way "
                       "(Unicode NFC)")
            continue
        # a name that differs only in case is the likeliest meant ('Model-A' for 'model-a'),
        # though difflib's case-sensitive ratio may rank another name ('model-b') closer
        close = [k for k in map(str, known_list) if k.casefold() == str(n).casefold()][:1] or \
            difflib.get_close_matches(str(n), [str(k) for k in known_list], n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        has = "the spec's `cohorts:` declares" if declared else "the table has"
        out.append(f"  - {where}: unknown {kind} {quote(n)}{hint}; {has} {quote(sorted(known_list))}")
    return out
