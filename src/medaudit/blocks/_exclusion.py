"""Table 19 of paper 000: exclusion counts of the overlap-exclusion retraining.

The counts reach an audit two ways: recomputed from the score table for every scored
cohort, and carried in the retrained model's card (``ModelCard.training``) for what the
audit never scores (the source cohort's optimisation and selection subsets).
"""

from __future__ import annotations

import re
from typing import Any

import pandas as pd

from medaudit.blocks._base import AuditContext, spec_row
from medaudit.exceptions import SchemaError
from medaudit.io.spec import ModelCard, RetainedSpec

__all__ = ["COUNT_FIELDS", "exclusion_card_entries", "card_exclusion_counts", "exclusion_rows"]

COUNT_FIELDS = ("original", "excluded", "retained", "positives_retained", "negatives_retained")
_CARD_KEY = re.compile(r"exclusion\[(?P<cohort>.+)\]")
_COUNT_COLUMNS = ("n_original", "n_excluded", "n_retained", "n_pos_retained", "n_neg_retained")


def exclusion_card_entries(counts: pd.DataFrame) -> dict[str, str]:
    """Model-card ``training`` entries carrying Table 19 counts, one per row of ``counts``.

    Parameters
    ----------
    counts : pandas.DataFrame
        Columns ``cohort`` and :data:`COUNT_FIELDS` (the trainer's ``exclusion.csv``).

    Returns
    -------
    dict of str to str
        ``{"exclusion[<cohort>]": "original=138, excluded=1, retained=137, ..."}``, in
        row order; :func:`card_exclusion_counts` reads them back.

    Examples
    --------
    >>> t = pd.DataFrame([{"cohort": "mc", "original": 138, "excluded": 1, "retained": 137,
    ...                    "positives_retained": 58, "negatives_retained": 79}])
    >>> exclusion_card_entries(t)["exclusion[mc]"]
    'original=138, excluded=1, retained=137, positives_retained=58, negatives_retained=79'
    """
    missing = [c for c in ("cohort", *COUNT_FIELDS) if c not in counts.columns]
    if missing:
        raise SchemaError(f"exclusion counts lack column(s) {missing}; expected "
                          f"{['cohort', *COUNT_FIELDS]}.")
    return {f"exclusion[{r['cohort']}]": ", ".join(f"{k}={int(r[k])}" for k in COUNT_FIELDS)
            for r in counts.to_dict("records")}


def card_exclusion_counts(card: ModelCard) -> dict[str, dict[str, int]]:
    """Table 19 counts recorded in ``card.training`` (cohort -> field -> count), card order.

    Raises :class:`SchemaError` naming the entry when a value is not the
    :func:`exclusion_card_entries` form.
    """
    out: dict[str, dict[str, int]] = {}
    for key, value in card.training.items():
        m = _CARD_KEY.fullmatch(key)
        if m is None:
            continue
        parts = dict(p.split("=", 1) for p in (x.strip() for x in value.split(",")) if "=" in p)
        if sorted(parts) != sorted(COUNT_FIELDS) or not all(v.isdigit() for v in parts.values()):
            raise SchemaError(f"model card {card.name!r}: training entry {key!r} = {value!r} is not "
                              f"'{'=N, '.join(COUNT_FIELDS)}=N' (non-negative integers).")
        out[m["cohort"]] = {k: int(parts[k]) for k in COUNT_FIELDS}
    return out


def exclusion_rows(ctx: AuditContext, entry: RetainedSpec, prompt: str, cohorts: list[str],
                    infos: dict[str, dict[str, Any]]) -> tuple[dict[str, dict], list[dict]]:
    """Table 19 rows of one entry: (rows from the score table, rows only the card has)."""
    a, b = entry.a, entry.b
    card = card_exclusion_counts(ctx.spec.card(b))
    common = dict(model=b, prompt=prompt, criterion="exclusion_counts", seed=ctx.seed, family=None,
                  model_a=a, model_b=b)
    scored: dict[str, dict] = {}
    card_only = []
    for cohort in cohorts:
        y, keep = infos[cohort]["y"], infos[cohort]["keep"]
        got = dict(zip(COUNT_FIELDS, (int(y.size), int((~keep).sum()), int(keep.sum()),
                                      int(y[keep].sum()), int((y[keep] == 0).sum())), strict=True))
        rec = card.get(cohort)
        differs = [f"{k}={rec[k]}" for k in COUNT_FIELDS if rec is not None and rec[k] != got[k]]
        scored[cohort] = (spec_row(cohort=cohort, **common, source="scores",
                               **dict(zip(_COUNT_COLUMNS, got.values(), strict=True)),
                               qualification=(f"model card of {b!r} records {', '.join(differs)}"
                                              " for this cohort; counts here are the score "
                                              "table's" if differs else "")))
    for cohort, rec in card.items():
        if cohort not in cohorts:
            card_only.append(spec_row(cohort=cohort, **common, source="model card",
                                      **{c: rec[k] for c, k in zip(_COUNT_COLUMNS, COUNT_FIELDS,
                                                                   strict=True)},
                                      qualification=""))
    return scored, card_only
