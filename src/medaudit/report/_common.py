"""Helpers the report's page and its checklist share (reading outcome tables, wording lists).

Every function here only reads and formats what the blocks produced; rounding stays in
:mod:`medaudit.report.format`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

import pandas as pd

from medaudit.report import format as fmt

__all__ = ["QUALIFICATIONS", "TABLE21", "label_text", "plain_text", "outcome_tables", "block_table",
           "unique_texts", "and_list", "split_qualifications", "provenance_files",
           "simulations", "data_sources"]

#: qualification kind -> (mark, legend text, keyword in the qualification text)
QUALIFICATIONS: dict[str, tuple[str, str, str]] = {
    "exposure": ("E", "documented exposure of the model to this cohort", "exposure"),
    "small": ("S", "small stratum (few images in a group)", "small group"),
    "degenerate": ("D", "degenerate bootstrap replicates (marked on the claim; cells in its details)",
                   "degenerate"),
    "useless": ("U", "useless operating point (the other rate is near zero)", "useless"),
}

#: paper 000, Table 21: claim component -> question to state explicitly
TABLE21: tuple[tuple[str, str], ...] = (
    ("Implementation", "Which weights, processor, score map and text define the classifier?"),
    ("Population and endpoint", "Which setting and reference labels support the result?"),
    ("Negative spectrum", "Are controls healthy, broadly abnormal or a named competing disease?"),
    ("Score interpretation", "Which prevalence and reliability measure support the claim?"),
    ("Operating rule", "Does an unchanged source threshold retain sensitivity and acceptable "
                       "specificity?"),
    ("Uncertainty and provenance", "What is resampled, what remains fixed, and what exposure is "
                                   "known?"),
)


def label_text(v: Any) -> str:
    """Text of a label-like value ('' when missing); numbers in their declared form."""
    if fmt.is_missing(v):
        return ""
    if isinstance(v, str):
        return v
    return fmt.fmt_grid(v)


def outcome_tables(outcome: Any) -> dict[str, dict[str, pd.DataFrame]]:
    return {name: dict(res.tables) for name, res in outcome.results.items()}


def block_table(outcome: Any, block: str, name: str) -> pd.DataFrame:
    res = outcome.results.get(block)
    if res is None or name not in res.tables:
        return pd.DataFrame()
    return res.tables[name]


def unique_texts(values: Iterable[Any]) -> list[str]:
    return list(dict.fromkeys(label_text(v) for v in values if label_text(v)))


def and_list(items: Sequence[str]) -> str:
    items = list(items)
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1]


def split_qualifications(text: Any) -> list[dict[str, str]]:
    """Split a qualification string into parts, each tagged with its kind and mark.

    Parts are joined with "; " upstream, and a part may itself contain "; " ("... undefined);
    interval from the rest"): a piece that names no kind stays with the piece before it.
    """
    out: list[dict[str, str]] = []
    for part in (p.strip() for p in label_text(text).split(";")):
        if not part:
            continue
        kind, mark = "other", ""
        for k, (m, _legend, key) in QUALIFICATIONS.items():
            if key in part:
                kind, mark = k, m
                break
        if kind == "other" and out:
            out[-1]["text"] += "; " + part
            continue
        out.append({"kind": kind, "mark": mark, "text": part})
    return out


def plain_text(v: Any) -> str:
    if isinstance(v, dict | list | tuple):
        return json.dumps(v, sort_keys=True, ensure_ascii=False, default=str)
    if isinstance(v, bool):
        return "yes" if v else "no"
    return label_text(v) if not isinstance(v, str) else v


def provenance_files(inputs: dict[str, Any]) -> list[str]:
    out = []
    for x in inputs.get("scores_wide") or []:
        out.append(f"{plain_text(x.get('path'))} ({plain_text(x.get('cohort'))}; sha256 "
                   f"{plain_text(x.get('sha256'))[:12]}…)")
    if inputs.get("scores"):
        out.append(f"{plain_text(inputs['scores'])} (sha256 {plain_text(inputs.get('sha256'))[:12]}…)")
    return out


def simulations(inputs: dict[str, Any]) -> list[dict[str, str]]:
    """The seeded simulations an audit's inputs come from: what, generator and seed of each.

    A simulated score table records ``simulated`` at the top of the inputs, a simulated
    judgment table (paper 002) under ``inputs["judgments"]``; both are found here, so every
    simulated example carries the banner.

    Examples
    --------
    >>> simulations({"judgments": {"simulated": True, "generator": "g", "generator_seed": 7}})
    [{'what': 'judgment table', 'generator': 'g', 'seed': '7'}]
    >>> simulations({"scores": "s.csv"})
    []
    """
    out = []
    for what, record in (("score table", inputs), ("judgment table", inputs.get("judgments"))):
        if isinstance(record, dict) and record.get("simulated"):
            out.append({"what": what, "generator": plain_text(record.get("generator", "")),
                        "seed": plain_text(record.get("generator_seed", ""))})
    return out


def data_sources(inputs: dict[str, Any]) -> list[dict[str, str]]:
    """The public datasets recorded in the inputs (``data_source``: name, citation, licence, url)."""
    return [{k: plain_text(d.get(k, "")) for k in ("name", "citation", "licence", "url")}
            for d in inputs.get("data_source") or [] if isinstance(d, dict)]
