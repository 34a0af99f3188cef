"""Tidy result rows: the evaluation specification E, provenance, then the values.

Every row a block writes starts with E = (m, p, C, N, π, τ, r) in the columns
``model, prompt, cohort, negatives, prevalence, threshold, criterion`` and the
provenance ``design, n_resamples, seed, family`` (:data:`E_COLUMNS`,
:data:`PROVENANCE_COLUMNS`); :func:`spec_row` builds one, :func:`interval` gives the
columns of an interval, and :func:`verdict` is the one rule for reading a difference.

Blocks leave ``seed`` empty: the runner (``audit.run.run_block``) writes the run seed into
every empty ``seed`` cell of every table (:func:`stamp_seed`), so no block can forget it or
stamp another number.  A row drawn from a seed of its own (the agreement block's shots,
``first_seed + repeat``) passes it, and the runner keeps it.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

__all__ = ["E_COLUMNS", "PROVENANCE_COLUMNS", "spec_row", "interval", "verdict", "stamp_seed"]

E_COLUMNS = ("model", "prompt", "cohort", "negatives", "prevalence", "threshold", "criterion")
PROVENANCE_COLUMNS = ("design", "n_resamples", "seed", "family")


def spec_row(*, model: str, prompt: str, cohort: str, negatives: str = "all",
             prevalence: Any = "observed", threshold: Any = None, criterion: str,
             design: str | None = None, n_resamples: int | None = None, seed: int | None = None,
             family: str | None = None, **values: Any) -> dict[str, Any]:
    """One tidy result row: E, then provenance, then the values.

    ``seed`` stays None unless the row was drawn from a seed other than the run's: the
    runner fills the run seed in (:func:`stamp_seed`).
    """
    return {"model": model, "prompt": prompt, "cohort": cohort, "negatives": negatives,
            "prevalence": prevalence, "threshold": threshold, "criterion": criterion,
            "design": design, "n_resamples": n_resamples, "seed": seed, "family": family,
            **values}


def interval(r: Any, **counts: Any) -> dict[str, Any]:
    """The value columns of a bootstrap result ``r``: estimate, interval, degenerate count, n.

    ``counts`` overrides ``n``/``n_pos``/``n_neg`` (a soft-label result counts label
    mass; a table that counts images passes them).
    """
    return {"estimate": r.estimate, "ci_low": r.ci_low, "ci_high": r.ci_high,
            "n_degenerate": r.n_degenerate, "n": r.n, "n_pos": r.n_pos, "n_neg": r.n_neg,
            **counts}


def verdict(ci_low: float, ci_high: float, direction: int, *, n_degenerate: int = 0) -> str:
    """``a_better`` / ``b_better`` when the interval of A - B excludes 0, else ``unresolved``.

    ``direction`` is +1 when a higher metric is better (AUROC), -1 when lower is
    better (Brier).  A NaN endpoint (undefined stratum) gives ``not defined``.  An interval
    that left ``n_degenerate`` > 0 replicates out (a class absent from them) is conditional
    on the draws that had both, so it decides nothing: ``unresolved``, as the claims matrix
    judges the same cell (its ``qualification`` counts the replicates left out).
    """
    if not (np.isfinite(ci_low) and np.isfinite(ci_high)):
        return "not defined"
    if n_degenerate and n_degenerate > 0:
        return "unresolved"
    if ci_low > 0:
        return "a_better" if direction > 0 else "b_better"
    if ci_high < 0:
        return "b_better" if direction > 0 else "a_better"
    return "unresolved"


def stamp_seed(table: pd.DataFrame, seed: int) -> pd.DataFrame:
    """``table`` with the run ``seed`` in every empty cell of its ``seed`` column.

    A table without a ``seed`` column (settings, bookkeeping) is returned as it is; a
    seed a block wrote itself is kept.  The column becomes integer when no cell is left
    empty, as it is when every row is stamped.
    """
    if "seed" not in table.columns or not table["seed"].isna().any():
        return table
    out = table.copy()
    filled = out["seed"].astype(object).where(out["seed"].notna(), seed)
    out["seed"] = filled.astype("int64")
    return out
