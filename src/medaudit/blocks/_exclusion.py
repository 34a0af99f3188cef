"""Table 19 of paper 000: exclusion counts of the overlap-exclusion retraining.

The counts reach an audit two ways: recomputed from the score table for every scored
cohort, and carried in the retrained model's card (``ModelCard.training``, written and read
by :mod:`medaudit.io.modelcard`) for what the audit never scores (the source cohort's
optimisation and selection subsets).
"""

from __future__ import annotations

from typing import Any

from medaudit.blocks.context import AuditContext
from medaudit.blocks.rows import spec_row
from medaudit.io.modelcard import COUNT_FIELDS, card_exclusion_counts

__all__ = ["COUNT_FIELDS", "exclusion_rows"]

_COUNT_COLUMNS = ("n_original", "n_excluded", "n_retained", "n_pos_retained", "n_neg_retained")


def exclusion_rows(ctx: AuditContext, entry: Any, prompt: str, cohorts: list[str],
                    infos: dict[str, dict[str, Any]]) -> tuple[dict[str, dict], list[dict]]:
    """Table 19 rows of one entry: (rows from the score table, rows only the card has)."""
    a, b = entry.a, entry.b
    card = card_exclusion_counts(ctx.study.card(b))
    common = dict(model=b, prompt=prompt, criterion="exclusion_counts", family=None,
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
