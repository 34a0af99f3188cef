"""The model card that travels beside the scores, and the Table 19 counts it can carry.

A :class:`ModelCard` holds what a score table cannot: the checkpoint and its immutable
revision, the image processor, the score rule, library versions, how a trained model was
made, and per-cohort exposure notes.  Scorers (``adapters``), the trainer (``train``) and
the audit spec all use it, so it lives here, below every one of them.

Paper 000's Table 19 (exclusion counts of the overlap-exclusion retraining) reaches an
audit two ways: recomputed from the score table for every scored cohort, and carried in
the retrained model's card (``ModelCard.training``) for what the audit never scores.
:func:`exclusion_card_entries` writes those card entries, :func:`card_exclusion_counts`
reads them back.
"""

from __future__ import annotations

import re

import pandas as pd
from pydantic import Field, model_validator

from medaudit.exceptions import SchemaError
from medaudit.io.specfile import Strict

__all__ = ["ModelCard", "COUNT_FIELDS", "exclusion_card_entries", "card_exclusion_counts"]

COUNT_FIELDS = ("original", "excluded", "retained", "positives_retained", "negatives_retained")
_CARD_KEY = re.compile(r"exclusion\[(?P<cohort>.+)\]")


class ModelCard(Strict):
    """Model metadata travelling beside the scores (checkpoint, revision, processor, exposure)."""

    name: str
    checkpoint: str | None = None
    revision: str | None = None
    processor: str | None = None
    score_rule: str | None = None
    learned_scale: float | None = None
    library_versions: dict[str, str] = Field(default_factory=dict)
    #: how a trained model was made (initial weights, device, autocast, seeds, split seed...)
    training: dict[str, str] = Field(default_factory=dict)
    #: cohort -> note, e.g. {"vindr": "documented pretraining exposure to VinDr-CXR"}
    exposure: dict[str, str] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _printed_text(self) -> ModelCard:
        # every text of the card is printed in report.html, summary.md and the claims
        # tables: a line break splits a Markdown table row, a text-direction override
        # reverses what follows it (the rule of the score table's names and the spec's name)
        from medaudit.io.schema import CONTROL

        texts = [("name", self.name)] + [(k, getattr(self, k)) for k in (
            "checkpoint", "revision", "processor", "score_rule")]
        for field_ in ("library_versions", "training", "exposure"):
            for k, v in getattr(self, field_).items():
                texts += [(f"{field_} key {k!r}", k), (f"{field_}[{k!r}]", v)]
        for where, text in texts:
            if text is not None and (m := re.search(CONTROL, text)):
                raise ValueError(f"{where} holds the control character U+{ord(m.group()):04X} "
                                 "(a line break, tab or text-direction override); remove it")
        return self


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
