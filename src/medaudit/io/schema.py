"""The ScoreTable schema, validated at the door (one module for every table rule).

A ScoreTable is long: one row per (model, prompt, image) with
``image_id, cohort, model, prompt, score, label`` and optionally ``label_soft``,
``negative_group``, ``patient_id``, ``split`` and ``seed``.  Errors name the
source file, the row (0-based data row) and the column, and say what to do.
Nothing is dropped, flipped or coerced silently.

Unknown columns
---------------
A column that is not part of the schema is kept and reported by :func:`unknown_columns` (the
audit lists them in its provenance), with one exception: a column whose name is close to an
optional column the table lacks (``label_sfot`` beside no ``label_soft``) is an **error**, not
a warning, "did you mean 'label_soft'?".  An error rather than a warning because the mistake
does not fail anything later: the soft-label analysis would silently not run.  Close means a
case-insensitive :func:`difflib.get_close_matches` ratio of at least 0.8; rename the column
(to the schema's name, or to something clearly different) to proceed.  ``cohort`` and
``prompt`` count as optional here (:data:`FILLED_COLUMNS`): a table without them is read as one
cohort or one prompt, so ``Cohort`` beside no ``cohort`` would silently pool every site.

Where a row came from
---------------------
Messages name a row as the user can find it: ``line 5`` of a CSV (``attrs["first_line"]``, set
by :func:`medaudit.io.tables.read_table`), ``jan.csv line 5`` of a table stacked from several
files (:func:`stack_files`), else ``row 5`` of a table built in memory.  A table cut down to
some of its rows keeps those places with :func:`take_rows` (``attrs["origin"]``).

Names
-----
The text keys a report prints and compares (``model``, ``prompt``, ``cohort``,
``negative_group``) may not start or end with whitespace: ``"site1 "`` and ``"site1"`` would be
two cohorts that print alike; for the same reason two names may not differ only in Unicode
normal form (``"café"`` precomposed and with a combining accent) or in a run of inner
whitespace (a page collapses it).  No text column may hold a control character (a newline, a
tab): it would break the report's tables and the one-line messages.
"""

from __future__ import annotations

import difflib
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from medaudit.exceptions import SchemaError
from medaudit.io.messages import quote

__all__ = ["SCORE_COLUMNS", "OPTIONAL_COLUMNS", "FILLED_COLUMNS", "validate_score_table",
           "require_columns", "row_places", "row_place", "unknown_columns", "text_columns",
           "take_rows", "stack_files", "RowOrigin", "binary_labels"]

SCORE_COLUMNS = ("image_id", "cohort", "model", "prompt", "score", "label")
OPTIONAL_COLUMNS = ("label_soft", "negative_group", "patient_id", "split", "seed")
#: required columns a reader fills in when the table lacks them (one cohort, one prompt)
FILLED_COLUMNS = ("cohort", "prompt")
_TEXT = ("image_id", "cohort", "model", "prompt", "negative_group", "patient_id", "split")
#: text keys printed as names and compared exactly: no whitespace at either end
_NAMES = ("cohort", "model", "prompt", "negative_group")
#: C0 and C1 control characters (newline, tab, ...), the Unicode line and paragraph
#: separators, and the text-direction embeddings, overrides and isolates (U+202A-E,
#: U+2066-9: one left open reverses the text printed after the name, in the page and figures)
CONTROL = r"[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]"


def row_places(table: pd.DataFrame | pd.Series, mask: np.ndarray, limit: int = 5) -> str:
    """Where ``mask`` holds in ``table``, for error messages, as the score table's messages
    name rows: ``"lines 2, 5"`` for a table read from a CSV file (line 1 is its header),
    ``"rows 1, 4"`` (counted from 1) for one built in memory; the first ``limit``."""
    return _Where(table).places(np.asarray(mask, dtype=bool), limit)


def row_place(table: pd.DataFrame | pd.Series, i: int) -> str:
    """Row ``i`` (0-based) of ``table`` as :func:`row_places` names it: ``"line 5"``."""
    return _Where(table).place(int(i))


def text_columns(table: pd.DataFrame, columns: Sequence[str], *, source: str,
                 hint: str = "") -> pd.DataFrame:
    """``table`` (a copy, index reset) with ``columns`` as text; an empty cell is an error.

    A missing value must not become the text ``"nan"``, and a blank key names nothing, so
    both raise :class:`SchemaError` naming the column and the first rows (file lines for a
    table read from a file, as :func:`row_places` names them), then ``hint``.
    """
    t = table.reset_index(drop=True).copy()
    for c in columns:
        na = t[c].isna().to_numpy()
        t[c] = t[c].astype(str)
        empty = na | (t[c].str.strip() == "").to_numpy()
        if empty.any():
            raise SchemaError(f"{source}: column {c!r} is empty at {row_places(table, empty)}"
                              + (f"; {hint}." if hint else "."))
    return t


@dataclass(frozen=True, eq=False)
class RowOrigin:
    """Where each row of a table came from (``table.attrs["origin"]``), for messages.

    Kept in ``DataFrame.attrs``, which pandas copies and compares on every operation: it
    compares by identity and copies as itself (it is never changed), so a large table pays
    nothing for it and a concatenation of differently sourced tables simply drops it.
    """

    #: "line" (of a file) or "row" (of a table in memory)
    word: str
    #: the 1-based line or row of each row
    numbers: np.ndarray
    #: each row's file, when the rows come from several (else None)
    files: np.ndarray | None = None

    def __deepcopy__(self, memo: dict[int, Any]) -> RowOrigin:
        return self


def _origin(table: pd.DataFrame) -> tuple[str, np.ndarray | None, np.ndarray | None]:
    """Where each row of ``table`` came from: (word, numbers, files), see the module notes.

    ``numbers`` is None for a table built in memory (row ``i`` is ``row i + 1``); ``files``
    is None unless the rows come from several files.
    """
    # pandas carries attrs through a filter or a sort (df[mask], sort_values) as well: the
    # lines hold only for the table as made, all its rows in their order (an index 0, 1, 2)
    idx = table.index
    in_order = isinstance(idx, pd.RangeIndex) and idx.start == 0 and idx.step == 1
    o = table.attrs.get("origin")
    if isinstance(o, RowOrigin) and len(o.numbers) == len(table) and in_order:
        return o.word, o.numbers, o.files
    first = table.attrs.get("first_line")
    whole = table.attrs.get("rows_read", len(table)) == len(table) and in_order
    if first is not None and whole:
        return "line", np.arange(len(table)) + int(first), None
    return "row", None, None


class _Where:
    """How messages name the rows of one table (a file's lines, or the table's rows)."""

    def __init__(self, table: pd.DataFrame) -> None:
        self.word, self.numbers, self.files = _origin(table)
        # a DataFrame's rows are counted from 1; where its index is not 0, 1, 2, ... its
        # label is given too, since that is what df.loc reads ("row 6 (index 1005)")
        idx = table.index
        default = isinstance(idx, pd.RangeIndex) and idx.start == 0 and idx.step == 1
        self.labels = None if self.numbers is not None or default else idx.tolist()

    def _number(self, i: int) -> str:
        n = i + 1 if self.numbers is None else int(self.numbers[i])
        return str(n) if self.labels is None else f"{n} (index {self.labels[i]!r})"

    def place(self, i: int) -> str:
        """``"line 5"`` (``"jan.csv line 5"``) for row ``i`` (0-based)."""
        return f"{'' if self.files is None else f'{self.files[i]} '}{self.word} {self._number(i)}"

    def places(self, mask: np.ndarray, limit: int = 5) -> str:
        """Where ``mask`` holds: ``"lines 2, 5 (and 3 more)"``, ``"b.csv lines 2, 5; c.csv line 3"``."""
        idx = np.flatnonzero(mask)
        more = f" (and {idx.size - limit} more)" if idx.size > limit else ""
        groups: dict[str, list[str]] = {}  # file -> its numbers, files in order of first mention
        for i in idx[:limit]:
            groups.setdefault("" if self.files is None else f"{self.files[i]} ", []).append(
                self._number(int(i)))
        plural = len(groups) == 1 and idx.size > 1
        return "; ".join(f"{f}{self.word}{'s' if plural or len(ns) > 1 else ''} {', '.join(ns)}"
                         for f, ns in groups.items()) + more


def take_rows(table: pd.DataFrame, mask: np.ndarray) -> pd.DataFrame:
    """The rows of ``table`` where ``mask`` holds (index reset), still named as in their file.

    Examples
    --------
    >>> t = pd.DataFrame({"x": [1, 2, 3]})
    >>> t.attrs["first_line"] = 2
    >>> _Where(take_rows(t, np.array([False, True, True]))).places(np.array([False, True]))
    'line 4'
    """
    word, numbers, files = _origin(table)
    mask = np.asarray(mask, dtype=bool)
    out = table[mask].reset_index(drop=True)
    out.attrs = {k: v for k, v in table.attrs.items() if k not in ("first_line", "origin")}
    out.attrs["origin"] = RowOrigin(word, np.flatnonzero(mask) + 1 if numbers is None else numbers[mask],
                                    None if files is None else files[mask])
    return out


def stack_files(tables: Sequence[pd.DataFrame], names: Sequence[str], *, source: str) -> pd.DataFrame:
    """``tables`` (one per file, named ``names``) as one table whose messages name file and line.

    ``source`` names the whole (``attrs["source"]``, which :func:`medaudit.audit.context.build_context`
    puts at the start of a message).
    """
    out = pd.concat(list(tables), ignore_index=True)
    places = [_origin(t) for t in tables]
    numbers = [np.arange(len(t)) + 1 if n is None else n for t, (_, n, _) in zip(tables, places, strict=True)]
    files = [np.full(len(t), name, dtype=object) if f is None else f
             for t, name, (_, _, f) in zip(tables, names, places, strict=True)]
    out.attrs = {"source": source, "origin": RowOrigin(
        "line" if all(w == "line" for w, _, _ in places) else "row",
        np.concatenate(numbers) if numbers else np.zeros(0, dtype=int),
        np.concatenate(files) if files else np.zeros(0, dtype=object))}
    return out


def _has(v: Any) -> str:
    """What a cell holds, for a message: ``"is empty"`` or ``"has 'yes'"``."""
    empty = v is None or (np.ndim(v) == 0 and bool(pd.isna(v))) or (isinstance(v, str) and not v.strip())
    return "is empty" if empty else f"has {quote(v)}"


def _are(mask: np.ndarray) -> str:
    return "is" if int(np.count_nonzero(mask)) == 1 else "are"


def binary_labels(table: pd.DataFrame, column: str = "label", *, source: str,
                  positive: str = "positive", origin: pd.DataFrame | None = None) -> NDArray[np.int64]:
    """Column ``column`` of ``table`` as 0/1 integers; :class:`SchemaError` naming the rows that are not.

    ``positive`` says in the message what 1 stands for (``"1 = TB"``); rows are named by
    their lines in the file that ``origin`` (default ``table``, the same rows) was read from,
    where it is known.
    """
    raw = table[column]
    lab = pd.to_numeric(raw, errors="coerce").to_numpy(dtype=float)
    bad = ~np.isin(lab, (0.0, 1.0))
    if bad.any():
        where, i = _Where(table if origin is None else origin), int(np.flatnonzero(bad)[0])
        raise SchemaError(f"{source}: column {column!r} must be 0 or 1 (1 = {positive}); "
                          f"{where.places(bad)} {_are(bad)} not ({where.place(i)} "
                          f"{_has(raw.iloc[i])}).")
    return lab.astype(np.int64)


def require_columns(table: pd.DataFrame, required: Sequence[str], *, source: str, what: str,
                    optional: Sequence[str] = (), noun: str = "table", filled: Sequence[str] = ()
                    ) -> None:
    """Raise :class:`SchemaError` naming the missing columns, or when ``table`` has no rows.

    One message for every long table medaudit reads (score tables, judgment tables,
    scoring manifests): ``"<source>: missing column(s) [...]; a <what> needs [...]"``.
    ``filled`` are required columns the readers fill in when a file lacks them: the
    message names them apart, so that a user is not told to add what is optional to them.
    """
    if isinstance(table.columns, pd.MultiIndex):
        raise SchemaError(f"{source}: the columns have {table.columns.nlevels} levels (a "
                          "MultiIndex); give each column one name, e.g. df.columns = "
                          "['_'.join(map(str, c)) for c in df.columns].")
    dup = sorted({str(c) for c in table.columns[table.columns.duplicated()]})
    if dup:  # pandas would hand a frame where one column is expected
        raise SchemaError(f"{source}: column(s) {dup} appear more than once; give each column "
                          f"of the {noun} one name.")
    missing = [c for c in required if c not in table.columns]
    if missing:
        known = set(required) | set(optional)
        hints = [f"{quote(c)} -> {quote(m)}" for c, m in
                 ((c, _close(str(c), missing)) for c in table.columns if c not in known) if m]
        hint = f"; did you mean {', '.join(hints[:len(missing)])}?" if hints else ""
        needs = [c for c in required if c not in filled]
        notes = ([f"and {list(filled)} where there is more than one of either"] if filled else []) + (
            [f"optional: {list(optional)}"] if optional else [])
        raise SchemaError(f"{source}: missing column(s) {missing}{hint}; a {what} needs {needs}"
                          + (f" ({'; '.join(notes)})" if notes else "") + ".")
    if len(table) == 0:
        raise SchemaError(f"{source}: the {noun} has no rows.")


def _close(name: str, candidates: Sequence[str]) -> str | None:
    """The candidate ``name`` is probably a misspelling of (case-insensitive), if any."""
    lower = {c.lower(): c for c in candidates}
    hit = difflib.get_close_matches(name.lower(), list(lower), n=1, cutoff=0.8)
    return lower[hit[0]] if hit else None


def unknown_columns(table: pd.DataFrame, *, source: str = "score table",
                    required: Sequence[str] = SCORE_COLUMNS,
                    optional: Sequence[str] = OPTIONAL_COLUMNS,
                    filled: Sequence[str] = FILLED_COLUMNS) -> list[str]:
    """The columns of ``table`` outside the schema; a near miss of an absent optional one is an error.

    Parameters
    ----------
    table : DataFrame
        The table as read.
    source : str
        Name used in messages (the file path when read from disk).
    required, optional : sequence of str
        The schema's columns (default: the ScoreTable's).
    filled : sequence of str
        Required columns a reader fills in when absent (default: :data:`FILLED_COLUMNS`);
        a near miss of one of them is refused like that of an optional column.  Call this on
        the table as read, before they are filled.

    Returns
    -------
    list of str
        Unknown column names in table order (for the provenance).

    Raises
    ------
    SchemaError
        A column's name is close to an optional column the table lacks ("did you mean").

    Examples
    --------
    >>> t = pd.DataFrame(columns=[*SCORE_COLUMNS, "sex", "site"])
    >>> unknown_columns(t)
    ['sex', 'site']
    >>> unknown_columns(pd.DataFrame(columns=[*SCORE_COLUMNS, "label_sfot"]), source="s.csv")
    Traceback (most recent call last):
    ...
    medaudit.exceptions.SchemaError: s.csv: column 'label_sfot' is not a ScoreTable column; did you mean 'label_soft'? Rename it (medaudit would otherwise ignore it).
    >>> unknown_columns(pd.DataFrame(columns=["image_id", "Cohort", "model", "score", "label"]), source="s.csv")
    Traceback (most recent call last):
    ...
    medaudit.exceptions.SchemaError: s.csv: column 'Cohort' is not a ScoreTable column; did you mean 'cohort'? Rename it (medaudit would otherwise ignore it).
    """  # noqa: E501
    known = set(required) | set(optional)
    absent = [c for c in (*filled, *optional) if c not in table.columns]
    unknown = [str(c) for c in table.columns if c not in known]
    for col in unknown:
        close = _close(col, absent)
        if close is not None:
            raise SchemaError(f"{source}: column {quote(col)} is not a ScoreTable column; did you "
                              f"mean {quote(close)}? Rename it (medaudit would otherwise ignore it).")
    return unknown


def validate_score_table(
    table: pd.DataFrame, *, source: str = "score table", probabilities: bool = True,
    key: tuple[str, ...] = ("model", "prompt", "cohort", "image_id"),
    logits_hint: str = "Declare `score_scale: logits` in the spec",
    printed: Sequence[str] = (),
) -> pd.DataFrame:
    """Return a validated copy with canonical dtypes, or raise :class:`SchemaError`.

    Parameters
    ----------
    table : DataFrame
        The long score table.
    source : str
        Name used in messages (the file path when read from disk).
    probabilities : bool, default=True
        Require scores in [0, 1] (the spec may declare raw logits instead).
    key : tuple of str
        Columns that must identify a row uniquely.
    logits_hint : str
        What the message on scores outside [0, 1] tells the user to do (a command without
        a spec names its flag instead).
    printed : sequence of str
        Other columns whose values the report prints (the spec's subgroups): checked for
        control characters as the names are, their values kept as they are.
    """
    require_columns(table, SCORE_COLUMNS, source=source, what="ScoreTable",
                    optional=OPTIONAL_COLUMNS, filled=FILLED_COLUMNS)
    unknown_columns(table, source=source)
    where = _Where(table)  # a CSV read by io.tables: name its lines
    t = table.reset_index(drop=True).copy()
    for col in _TEXT:
        if col not in t.columns:
            continue
        if col == "negative_group":
            t[col] = t[col].astype(object).where(t[col].notna(), "")
        else:
            # "" in a table in memory is the empty cell a CSV reads as missing: one rule
            empty = (t[col].isna() | (t[col].astype(str).str.strip() == "")).to_numpy()
            if empty.any():
                raise SchemaError(f"{source}: column {col!r} is empty at {where.places(empty)}; "
                                  "every row needs a value.")
        t[col] = t[col].astype(str)
        _check_text(t[col], col, source=source, where=where)
    for col in printed:
        if col in t.columns and col not in _TEXT:
            _check_text(t[col].astype(str), col, source=source, where=where)
    score = pd.to_numeric(t["score"], errors="coerce").to_numpy(dtype=float)
    bad = ~np.isfinite(score)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raw = t["score"].iloc[i]
        comma = (" Numbers with a comma ('3,496', '0,35') are not read: write them without "
                 "thousands separators and with '.' as the decimal point."
                 if isinstance(raw, str) and re.fullmatch(r"\s*[-+]?[\d.]*,[\d,.]*\s*", raw)
                 and re.search(r"\d", raw) else "")
        raise SchemaError(f"{source}: column 'score' must be finite numbers; {where.places(bad)} "
                          f"{_are(bad)} not ({where.place(i)} {_has(raw)}).{comma}")
    if probabilities:
        out = (score < 0) | (score > 1)
        if out.any():
            # scores from 0 to 100 are far likelier percentages than logits: say so
            # (a maximum of 1.0000001 or 1.5 is a probability gone astray, not a percentage)
            pct = (" Scores from 0 to 100 look like percentages: divide them by 100."
                   if score.min() >= 0 and 2 <= score.max() <= 100 else "")
            raise SchemaError(
                f"{source}: column 'score' must be probabilities in [0, 1]; "
                f"{where.places(out)} {_are(out)} outside "
                f"(max {float(score.max())!r}, min {float(score.min())!r}).{pct} {logits_hint} "
                "if these are raw logits; medaudit never clips.")
    t["score"] = score
    for col in ("model", "prompt"):
        # '|' joins model and prompt into one key inside the blocks: refuse it rather than
        # let two different (model, prompt) pairs collide
        bar = t[col].str.contains("|", regex=False).to_numpy()
        if bar.any():
            i = int(np.flatnonzero(bar)[0])
            raise SchemaError(f"{source}: column {col!r} may not contain '|' (reserved as a "
                              f"separator); {where.places(bar)} do ({where.place(i)}: "
                              f"{quote(t[col].iloc[i])}). "
                              "Rename it, e.g. with '/' or '-'.")
    t["label"] = binary_labels(t, source=source, origin=table)
    if "label_soft" in t.columns:
        ps = pd.to_numeric(t["label_soft"], errors="coerce").to_numpy(dtype=float)
        raw = t["label_soft"]
        empty = (raw.isna() | (raw.astype(str).str.strip() == "")).to_numpy()
        if empty.any():
            # a soft label given for some rows only is missing elsewhere, not out of range
            raise SchemaError(f"{source}: column 'label_soft' is empty on "
                              f"{where.places(empty)}; give a soft label for every row, or "
                              "drop the column (the soft metrics need one for every image).")
        badp = ~np.isfinite(ps) | (ps < 0) | (ps > 1)
        if badp.any():
            raise SchemaError(f"{source}: column 'label_soft' must lie in [0, 1]; "
                              f"{where.places(badp)} {'does' if _are(badp) == 'is' else 'do'} not.")
        t["label_soft"] = ps
    if "seed" in t.columns:
        sd = pd.to_numeric(t["seed"], errors="coerce")
        if sd.isna().any():
            raise SchemaError(f"{source}: column 'seed' must be integers; "
                              f"{where.places(sd.isna().to_numpy())} {_are(sd.isna().to_numpy())} not.")
        t["seed"] = sd.astype(np.int64)
    dup = t.duplicated(list(key), keep=False).to_numpy()
    if dup.any():
        ex = t.loc[dup, list(key)].head(2).to_dict("records")
        raise SchemaError(f"{source}: {int(dup.sum())} rows repeat a ({', '.join(key)}) key at "
                          f"{where.places(dup)}, e.g. {quote(ex)}; keep exactly one row per key.")
    if "negative_group" in t.columns:
        pos_group = (t["label"].to_numpy() == 1) & (t["negative_group"].to_numpy() != "")
        if pos_group.any():
            i = int(np.flatnonzero(pos_group)[0])
            raise SchemaError(f"{source}: column 'negative_group' must be empty for positives; "
                              f"{where.places(pos_group)} {_are(pos_group)} positive(s) in a "
                              f"negative group ({where.place(i)}: {quote(t['negative_group'].iloc[i])}).")
    # the label (and group) of an image must not differ between models/prompts
    per_image = [c for c in ("label", "label_soft", "negative_group", "patient_id", "split")
                 if c in t.columns]
    nunique = t.groupby(["cohort", "image_id"])[per_image].nunique()
    conflict = nunique[(nunique > 1).any(axis=1)]
    if len(conflict):
        (cohort, image), = conflict.index[:1].tolist()
        cols = [c for c in per_image if conflict.iloc[0][c] > 1]
        raise SchemaError(f"{source}: image {quote(image)} in cohort {quote(cohort)} has different {cols} "
                          "in different rows; an image's label and metadata must agree everywhere.")
    return t


def _check_text(values: pd.Series, col: str, *, source: str, where: _Where) -> None:
    """Refuse control characters in a text column; in a name, whitespace at either end, and
    two names that differ only in Unicode normal form, inner whitespace or invisible format
    characters (all print alike).

    Parameters
    ----------
    values : Series of str
        The column as text.
    col : str
        Its name (whitespace is checked in :data:`_NAMES` only: an id is never printed as a
        name, and ``" 007"`` is what the file says).
    source : str
        Names the table in the message.
    where : _Where
        Names the rows.

    Raises
    ------
    SchemaError
        Naming the column, the first place and its value (``repr``), and what to do.
    """
    # checked on the distinct values (a model or cohort column holds a handful among
    # hundreds of thousands of rows), then mapped back to rows only for the message
    codes, uniques = pd.factorize(values)
    u = pd.Series(uniques, dtype=object)
    ctrl_u = u.str.contains(CONTROL, regex=True).to_numpy(dtype=bool)
    if ctrl_u.any():
        ctrl = ctrl_u[codes]
        i = int(np.flatnonzero(ctrl)[0])
        raise SchemaError(f"{source}: column {col!r} holds a control character (a line break, tab, "
                          f"text-direction override, ...) at {where.places(ctrl)} ({where.place(i)}: "
                          f"{quote(values.iloc[i])}); it would break the report's tables or reorder "
                          "the text printed after it. Remove it from the value.")
    if col not in _NAMES:
        return
    padded_u = (u != u.str.strip()).to_numpy(dtype=bool)
    if padded_u.any():
        padded = padded_u[codes]
        i = int(np.flatnonzero(padded)[0])
        v = values.iloc[i]
        raise SchemaError(f"{source}: column {col!r} has whitespace at the start or end of a name at "
                          f"{where.places(padded)} ({where.place(i)}: {quote(v)}); it would count as a "
                          f"name different from {quote(v.strip())} but print alike. Remove the "
                          "whitespace.")
    # two names that differ only in Unicode normal form (é precomposed or e + combining
    # accent), in a run of inner whitespace (a page collapses it) or in invisible format
    # characters (a zero-width space, a soft hyphen, U+FEFF) print alike as well
    printed = [" ".join("".join(c for c in unicodedata.normalize("NFC", x)
                                if unicodedata.category(c) != "Cf").split()) for x in u.tolist()]
    first: dict[str, int] = {}
    for k, p in enumerate(printed):
        j = first.setdefault(p, k)
        if j != k:
            a_, b_ = u.iloc[j], u.iloc[k]
            at_a, at_b = (where.place(int(np.flatnonzero(codes == c)[0])) for c in (j, k))
            raise SchemaError(f"{source}: column {col!r} holds the names {quote(a_)} "
                              f"({ascii(a_)}, {at_a}) and {quote(b_)} ({ascii(b_)}, {at_b}), "
                              "which differ only in Unicode form, inner whitespace or invisible "
                              "characters and would print alike; write them the same way (or as "
                              "names that differ visibly).")


def image_meta(table: pd.DataFrame) -> pd.DataFrame:
    """One row per (cohort, image_id) with label and the optional per-image columns."""
    cols = [c for c in ("label", "label_soft", "negative_group", "patient_id", "split")
            if c in table.columns]
    return table.drop_duplicates(["cohort", "image_id"]).set_index(["cohort", "image_id"])[cols]


def describe(table: pd.DataFrame) -> dict[str, Any]:
    """Counts per cohort (images, positives, negatives by group) for provenance."""
    meta = image_meta(table).reset_index()
    out: dict[str, Any] = {}
    for cohort, g in meta.groupby("cohort", sort=True):
        d = {"n": int(len(g)), "n_pos": int(g["label"].sum()), "n_neg": int((g["label"] == 0).sum())}
        if "negative_group" in g.columns:
            groups = g.loc[g["label"] == 0, "negative_group"].value_counts().sort_index()
            d["negative_groups"] = {str(k): int(v) for k, v in groups.items()}
        out[str(cohort)] = d
    return out
