"""The single-reader audit of paper 002 (M2.12): reader-vs-reference kappa, risk-tertile errors.

A reader labelled a sample of studies for every finding (present / absent / uncertain),
blinded to the models; the judgment table carries the label in its optional
``reader_label`` column (coded by :func:`medaudit.agreement.judgments.validate_judgments`:
1, 0, -1 uncertain, -9 not audited), repeated on every model row of the pair.  Both
summaries are descriptive (no test: the records are model-expanded and clustered):

* **kappa** -- the audited (study, finding) pairs with at least one evaluable model
  record (paper: 774 of 900 annotations), uncertain reader labels dropped and the
  model-expanded rows collapsed to one per pair (paper: 707), Cohen's kappa between the
  reader and the dataset's reference label (paper: 0.502);
* **risk tertiles** -- every model-expanded record (study, finding, model) with a
  reader label (paper: 1,305) sits in a reliability cell (model, institution, finding,
  direction) whose *risk* is its empirical disagreement rate with the reference,
  ``1 - k/n`` over the whole evaluable table of the protocol; the cells holding audited
  records are split into tertiles of risk and each tertile's *reader-flagged error rate*
  is the share of its records whose verdict differs from a definite reader label (paper:
  top 21.3 % vs bottom 13.3 %, from 127 and 132 studies).

[AMBIG] The paper does not say how cell risk was estimated nor whether tertiles split
cells or records; here risk is the empirical cell error rate (reproducible from the
table alone), tertiles split the distinct cells, each counted once, by the empirical
CDF of their risk (``tertile = min(3, ceil(3 F(risk)))``, so tied cells share a
tertile), and error rates count records with a definite reader label (uncertain ones
are counted in ``n_records`` but flag nothing).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from medaudit.agreement.judgments import NOT_AUDITED
from medaudit.exceptions import SchemaError
from medaudit.stats import cohen_kappa

__all__ = ["ReaderAudit", "reader_audit", "TERTILES"]

TERTILES = ("bottom", "middle", "top")


@dataclass(frozen=True, slots=True, kw_only=True)
class ReaderAudit:
    """What :func:`reader_audit` found (counts, kappa, per-tertile error rates)."""

    #: audited (study, finding) pairs with a reader label and >= 1 evaluable record
    n_pairs_evaluable: int
    #: of those, the pairs with a definite reader label (kappa's items)
    n_pairs: int
    kappa: float
    raw_agreement: float
    #: kappa per institution (pairs, kappa, raw agreement), institutions sorted
    by_institution: pd.DataFrame
    #: model-expanded records with a reader label (uncertain included) and with a definite one
    n_records: int
    n_records_definite: int
    #: one row per tertile: records, errors, rate, studies, cells, risk range
    tertiles: pd.DataFrame
    #: every audited record with its cell risk, tertile and reader-flagged error
    records: pd.DataFrame = field(repr=False)

    def to_dict(self) -> dict[str, Any]:
        return {"n_pairs_evaluable": self.n_pairs_evaluable, "n_pairs": self.n_pairs,
                "kappa": self.kappa, "raw_agreement": self.raw_agreement,
                "n_records": self.n_records, "n_records_definite": self.n_records_definite,
                "tertiles": self.tertiles.to_dict("records")}


def _tertile(risk: np.ndarray) -> np.ndarray:
    """Tertile index 0..2 of each value by its empirical CDF ``F`` (ties share a tertile)."""
    srt = np.sort(risk)
    F = np.searchsorted(srt, risk, side="right") / risk.size
    return np.minimum(3, np.ceil(np.round(3.0 * F, 12)).astype(np.int64)) - 1


def _kappa(pairs: pd.DataFrame) -> tuple[float, float]:
    if pairs.empty:
        return math.nan, math.nan
    k = cohen_kappa(pairs["reader_label"].to_numpy(), pairs["reference"].to_numpy())
    return float(k.estimate), float(k.details["observed_agreement"])


def reader_audit(table: pd.DataFrame, *, protocol: str, models: Sequence[str] | None = None
                 ) -> ReaderAudit:
    """Reader-vs-reference kappa and risk-tertile reader-flagged error rates (M2.12).

    Parameters
    ----------
    table : DataFrame
        The evaluable judgment table with a coded ``reader_label`` column.
    protocol : str
        The protocol whose records are audited (paper: narrative).
    models : sequence of str, optional
        The models whose records count (paper: the two primary VLMs); None = every model.

    Returns
    -------
    ReaderAudit

    Raises
    ------
    SchemaError
        The table has no ``reader_label`` column, or no audited pair has an evaluable
        record at ``protocol``.

    Examples
    --------
    Two studies, one finding, two models; the reader disagrees with the reference on s2:

    >>> t = pd.DataFrame({"study_id": ["s1", "s1", "s2", "s2"], "institution": "A",
    ...                   "model": ["m1", "m2"] * 2, "protocol": "narrative", "finding": "f",
    ...                   "prediction": [1, 0, 1, 1], "reference": [1, 1, 0, 0],
    ...                   "correct": [1, 0, 0, 0], "direction": ["present", "absent"] * 2,
    ...                   "reader_label": [1, 1, 1, 1]})
    >>> r = reader_audit(t, protocol="narrative")
    >>> r.n_pairs, r.raw_agreement, r.n_records
    (2, 0.5, 4)
    """
    if "reader_label" not in table.columns:
        raise SchemaError("the reader audit needs a 'reader_label' column in the judgment table "
                          "(present/absent/uncertain per audited study and finding).")
    t = table[table["protocol"] == protocol]
    if models is not None:
        t = t[t["model"].isin(models)]
    cell_keys = ["model", "institution", "finding", "direction"]
    g = t.groupby(cell_keys, sort=True)["correct"]
    risk = (1.0 - g.mean()).rename("risk")
    rec = t[t["reader_label"].to_numpy() != NOT_AUDITED].copy()
    if rec.empty:
        raise SchemaError(f"the reader audit has no audited (study, finding) pair with an evaluable "
                          f"{protocol!r} record of the selected models.")
    pairs_all = rec.drop_duplicates(["study_id", "finding"])
    definite = rec[rec["reader_label"].isin([0, 1])]
    # collapsing model-expanded rows: one item per pair (the reference is one per pair)
    pairs = definite.drop_duplicates(["study_id", "finding"])[
        ["institution", "study_id", "finding", "reader_label", "reference"]]
    kappa, po = _kappa(pairs)
    by_inst = []
    for inst, p in pairs.groupby("institution", sort=True):
        k, a = _kappa(p)
        by_inst.append({"institution": inst, "n_pairs": len(p), "kappa": k, "raw_agreement": a})
    rec = rec.merge(risk.reset_index(), on=cell_keys, how="left")
    rec["definite"] = rec["reader_label"].isin([0, 1])
    rec["reader_error"] = rec["definite"] & (rec["prediction"] != rec["reader_label"])
    cells = rec[rec["definite"]].drop_duplicates(cell_keys)[[*cell_keys, "risk"]]
    cells = cells.sort_values(cell_keys, kind="stable").reset_index(drop=True)
    cells["tertile"] = np.asarray(TERTILES, dtype=object)[_tertile(cells["risk"].to_numpy())] \
        if len(cells) else []
    rec = rec.merge(cells[[*cell_keys, "tertile"]], on=cell_keys, how="left")
    rows = []
    for name in TERTILES:
        d = rec[(rec["tertile"] == name) & rec["definite"]]
        c = cells[cells["tertile"] == name]
        rows.append({"tertile": name, "n_records": len(d), "n_errors": int(d["reader_error"].sum()),
                     "error_rate": float(d["reader_error"].mean()) if len(d) else math.nan,
                     "n_studies": int(d["study_id"].nunique()), "n_cells": len(c),
                     "risk_low": float(c["risk"].min()) if len(c) else math.nan,
                     "risk_high": float(c["risk"].max()) if len(c) else math.nan})
    return ReaderAudit(n_pairs_evaluable=len(pairs_all), n_pairs=len(pairs), kappa=kappa,
                       raw_agreement=po, by_institution=pd.DataFrame(by_inst),
                       n_records=len(rec), n_records_definite=int(rec["definite"].sum()),
                       tertiles=pd.DataFrame(rows), records=rec)
