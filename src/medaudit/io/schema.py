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
(to the schema's name, or to something clearly different) to proceed.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from medaudit.exceptions import SchemaError
from medaudit.io.messages import quote

__all__ = ["SCORE_COLUMNS", "OPTIONAL_COLUMNS", "validate_score_table", "require_columns", "row_list",
           "unknown_columns", "text_columns"]

SCORE_COLUMNS = ("image_id", "cohort", "model", "prompt", "score", "label")
OPTIONAL_COLUMNS = ("label_soft", "negative_group", "patient_id", "split", "seed")
_TEXT = ("image_id", "cohort", "model", "prompt", "negative_group", "patient_id", "split")


def row_list(mask: np.ndarray, limit: int = 5) -> str:
    """The first ``limit`` row numbers where ``mask`` holds, for error messages."""
    idx = np.flatnonzero(mask)
    more = f" (and {idx.size - limit} more)" if idx.size > limit else ""
    return ", ".join(str(i) for i in idx[:limit]) + more


_rows = row_list


def text_columns(table: pd.DataFrame, columns: Sequence[str], *, source: str) -> pd.DataFrame:
    """``table`` (a copy, index reset) with ``columns`` as text; an empty cell is an error.

    A missing value must not become the text ``"nan"``, and a blank key names nothing, so
    both raise :class:`SchemaError` naming the column and the first rows (0-based).
    """
    t = table.reset_index(drop=True).copy()
    for c in columns:
        na = t[c].isna().to_numpy()
        t[c] = t[c].astype(str)
        empty = na | (t[c].str.strip() == "").to_numpy()
        if empty.any():
            raise SchemaError(f"{source}: column {c!r} is empty at row(s) "
                              f"{np.flatnonzero(empty)[:5].tolist()}.")
    return t


def _places(mask: np.ndarray, first_line: int | None, limit: int = 5) -> str:
    """Where ``mask`` holds, 1-based and labelled: file lines of a CSV, else table rows."""
    idx = np.flatnonzero(mask)
    base = 1 if first_line is None else first_line
    more = f" (and {idx.size - limit} more)" if idx.size > limit else ""
    word = "row" if first_line is None else "line"
    return f"{word}{'s' if idx.size > 1 else ''} " + ", ".join(str(i + base) for i in idx[:limit]) + more


def _are(mask: np.ndarray) -> str:
    return "is" if int(np.count_nonzero(mask)) == 1 else "are"


def _place(i: int, first_line: int | None) -> str:
    return f"row {i + 1}" if first_line is None else f"line {i + first_line}"


def require_columns(table: pd.DataFrame, required: Sequence[str], *, source: str, what: str,
                    optional: Sequence[str] = (), noun: str = "table") -> None:
    """Raise :class:`SchemaError` naming the missing columns, or when ``table`` has no rows.

    One message for every long table medaudit reads (score tables, judgment tables,
    scoring manifests): ``"<source>: missing column(s) [...]; a <what> needs [...]"``.
    """
    dup = sorted({str(c) for c in table.columns[table.columns.duplicated()]})
    if dup:  # pandas would hand a frame where one column is expected
        raise SchemaError(f"{source}: column(s) {dup} appear more than once; give each column "
                          f"of the {noun} one name.")
    missing = [c for c in required if c not in table.columns]
    if missing:
        extra = f" (optional: {list(optional)})" if optional else ""
        known = set(required) | set(optional)
        hints = [f"{quote(c)} -> {quote(m)}" for c, m in
                 ((c, _close(str(c), missing)) for c in table.columns if c not in known) if m]
        hint = f"; did you mean {', '.join(hints[:3])}?" if hints else ""
        raise SchemaError(f"{source}: missing column(s) {missing}{hint}; a {what} needs "
                          f"{list(required)}{extra}.")
    if len(table) == 0:
        raise SchemaError(f"{source}: the {noun} has no rows.")


def _close(name: str, candidates: Sequence[str]) -> str | None:
    """The candidate ``name`` is probably a misspelling of (case-insensitive), if any."""
    lower = {c.lower(): c for c in candidates}
    hit = difflib.get_close_matches(name.lower(), list(lower), n=1, cutoff=0.8)
    return lower[hit[0]] if hit else None


def unknown_columns(table: pd.DataFrame, *, source: str = "score table",
                    required: Sequence[str] = SCORE_COLUMNS,
                    optional: Sequence[str] = OPTIONAL_COLUMNS) -> list[str]:
    """The columns of ``table`` outside the schema; a near miss of an absent optional one is an error.

    Parameters
    ----------
    table : DataFrame
        The table as read.
    source : str
        Name used in messages (the file path when read from disk).
    required, optional : sequence of str
        The schema's columns (default: the ScoreTable's).

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
    """  # noqa: E501
    known = set(required) | set(optional)
    absent = [c for c in optional if c not in table.columns]
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
    """
    require_columns(table, SCORE_COLUMNS, source=source, what="ScoreTable",
                    optional=OPTIONAL_COLUMNS)
    unknown_columns(table, source=source)
    first = table.attrs.get("first_line")  # a CSV read by io.tables: name its lines
    t = table.reset_index(drop=True).copy()
    for col in _TEXT:
        if col not in t.columns:
            continue
        if col == "negative_group":
            t[col] = t[col].astype(object).where(t[col].notna(), "")
        elif t[col].isna().any():
            raise SchemaError(f"{source}: column {col!r} is empty at "
                              f"{_places(t[col].isna().to_numpy(), first)}; every row needs a value.")
        t[col] = t[col].astype(str)
    score = pd.to_numeric(t["score"], errors="coerce").to_numpy(dtype=float)
    bad = ~np.isfinite(score)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise SchemaError(f"{source}: column 'score' must be finite numbers; {_places(bad, first)} "
                          f"{_are(bad)} not ({_place(i, first)} has {quote(t['score'].iloc[i])}).")
    if probabilities:
        out = (score < 0) | (score > 1)
        if out.any():
            raise SchemaError(
                f"{source}: column 'score' must be probabilities in [0, 1]; "
                f"{_places(out, first)} {_are(out)} outside "
                f"(max {float(score.max())!r}, min {float(score.min())!r}). {logits_hint} "
                "if these are raw logits; medaudit never clips.")
    t["score"] = score
    for col in ("model", "prompt"):
        # '|' joins model and prompt into one key inside the blocks: refuse it rather than
        # let two different (model, prompt) pairs collide
        bar = t[col].str.contains("|", regex=False).to_numpy()
        if bar.any():
            i = int(np.flatnonzero(bar)[0])
            raise SchemaError(f"{source}: column {col!r} may not contain '|' (reserved as a "
                              f"separator); {_places(bar, first)} do ({_place(i, first)}: "
                              f"{quote(t[col].iloc[i])}). "
                              "Rename it, e.g. with '/' or '-'.")
    lab = pd.to_numeric(t["label"], errors="coerce").to_numpy(dtype=float)
    badl = ~np.isin(lab, (0.0, 1.0))
    if badl.any():
        i = int(np.flatnonzero(badl)[0])
        raise SchemaError(f"{source}: column 'label' must be 0 or 1 (1 = positive); "
                          f"{_places(badl, first)} {_are(badl)} not ({_place(i, first)} has "
                          f"{quote(t['label'].iloc[i])}).")
    t["label"] = lab.astype(np.int64)
    if "label_soft" in t.columns:
        ps = pd.to_numeric(t["label_soft"], errors="coerce").to_numpy(dtype=float)
        badp = ~np.isfinite(ps) | (ps < 0) | (ps > 1)
        if badp.any():
            raise SchemaError(f"{source}: column 'label_soft' must lie in [0, 1]; "
                              f"{_places(badp, first)} {'does' if _are(badp) == 'is' else 'do'} not.")
        t["label_soft"] = ps
    if "seed" in t.columns:
        sd = pd.to_numeric(t["seed"], errors="coerce")
        if sd.isna().any():
            raise SchemaError(f"{source}: column 'seed' must be integers; "
                              f"{_places(sd.isna().to_numpy(), first)} {_are(sd.isna().to_numpy())} not.")
        t["seed"] = sd.astype(np.int64)
    dup = t.duplicated(list(key), keep=False).to_numpy()
    if dup.any():
        ex = t.loc[dup, list(key)].head(2).to_dict("records")
        raise SchemaError(f"{source}: {int(dup.sum())} rows repeat a ({', '.join(key)}) key at "
                          f"{_places(dup, first)}, e.g. {quote(ex)}; keep exactly one row per key.")
    if "negative_group" in t.columns:
        pos_group = (t["label"].to_numpy() == 1) & (t["negative_group"].to_numpy() != "")
        if pos_group.any():
            i = int(np.flatnonzero(pos_group)[0])
            raise SchemaError(f"{source}: column 'negative_group' must be empty for positives; "
                              f"{_places(pos_group, first)} {_are(pos_group)} positive(s) in a "
                              f"negative group ({_place(i, first)}: {quote(t['negative_group'].iloc[i])}).")
    # the label (and group) of an image must not differ between models/prompts
    per_image = [c for c in ("label", "negative_group", "patient_id", "split") if c in t.columns]
    nunique = t.groupby(["cohort", "image_id"])[per_image].nunique()
    conflict = nunique[(nunique > 1).any(axis=1)]
    if len(conflict):
        (cohort, image), = conflict.index[:1].tolist()
        cols = [c for c in per_image if conflict.iloc[0][c] > 1]
        raise SchemaError(f"{source}: image {quote(image)} in cohort {quote(cohort)} has different {cols} "
                          "in different rows; an image's label and metadata must agree everywhere.")
    return t


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
