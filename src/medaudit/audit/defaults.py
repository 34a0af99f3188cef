"""A default audit spec for a score table that comes without one (``medaudit summarize``).

What the table itself says is enough to audit it: every cohort (role ``primary``), the
primary prompt (the only one, or the first in sorted order), the score scale (logits
when a score lies outside [0, 1]), one negative-spectrum entry per cohort whose
negatives name two or more groups, and the blocks those inputs allow.  The result is
an ordinary spec, so ``summarize`` runs the one audit pipeline with its one validator
and one provenance record.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["default_spec"]


def _negative_groups(table: pd.DataFrame, cohort: str) -> list[str]:
    if "negative_group" not in table.columns or "label" not in table.columns:
        return []
    g = table.loc[(table["cohort"] == cohort) & (table["label"] == 0), "negative_group"]
    return sorted({str(v) for v in g if isinstance(v, str) and v})


def default_spec(table: pd.DataFrame, *, scores: str | Path, name: str | None = None,
                 **settings: Any) -> dict[str, Any]:
    """The spec (a mapping for :class:`~medaudit.audit.spec.AuditSpec`) that audits ``table``.

    Parameters
    ----------
    table : pandas.DataFrame
        The score table as read (its columns decide the cohorts, prompts and groups).
    scores : path
        Where the table was read from (the spec's ``scores:``).
    name : str, optional
        The audit's name (default: the file's stem).
    **settings
        Top-level keys to set as given (``seed``, ``n_resamples``, ``n_permutations``).
    """
    missing = [c for c in ("cohort", "score") if c not in table.columns]
    if missing:  # let the score-table validation name every missing column
        return {"name": name or Path(scores).stem, "scores": str(scores),
                "cohorts": {"_": {}}, **settings}
    cohorts = sorted({str(c) for c in table["cohort"]})
    prompts = sorted({str(p) for p in table["prompt"]}) if "prompt" in table.columns else ["none"]
    s = pd.to_numeric(table["score"], errors="coerce").to_numpy(dtype=np.float64)
    finite = s[np.isfinite(s)]
    scale = "logits" if finite.size and (finite.min() < 0 or finite.max() > 1) else "probabilities"
    spectrum = [{"cohort": c, "groups": g, "test": "permutation"}
                for c in cohorts if len(g := _negative_groups(table, c)) >= 2]
    blocks = ["discrimination", "operating_points"]
    if len(prompts) > 1:
        blocks.append("prompts")
    if spectrum:
        blocks.append("spectrum")
    if "seed" in table.columns:
        blocks.append("retained")
    spec: dict[str, Any] = {"name": name or Path(scores).stem, "scores": str(scores),
                            "score_scale": scale, "primary_prompt": prompts[0],
                            "cohorts": {c: {"role": "primary"} for c in cohorts},
                            "blocks": blocks, "spectrum": spectrum}
    spec.update(settings)
    return spec
