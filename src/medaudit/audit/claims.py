"""The portability matrix (paper 000 M0.1): every block's claims, in registry order.

Each registered block states its own claims from the block tables
(:meth:`medaudit.blocks.block.Block.claims`; the verdict vocabulary is in
:mod:`medaudit.blocks.claimkit`): rankings and reliability (``discrimination``),
operating constraints (``transport``), rankings under soft labels and ranking
stability (``label_uncertainty``), error rates across institutions
(``error_structure``), interval coverage and the estimator gap (``agreement``).  This
module puts them together in one long table, one row per claim x changed element of E,
with the columns :data:`~medaudit.blocks.claimkit.CLAIM_COLUMNS`.  Nothing here
computes a statistic.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from medaudit.blocks import BLOCKS
from medaudit.blocks.block import BlockResult
from medaudit.blocks.claimkit import CLAIM_COLUMNS

__all__ = ["build_claims", "CLAIM_COLUMNS"]


def build_claims(results: Mapping[str, BlockResult], spec: Any) -> pd.DataFrame:
    """The portability matrix in long form: one row per claim × changed element."""
    study = spec.study()
    rows: list[dict[str, Any]] = []
    for name, block in BLOCKS.items():
        rows += block.claims(results, study, spec.block_config(name))
    if not rows:
        return pd.DataFrame(columns=list(CLAIM_COLUMNS))
    df = pd.DataFrame(rows)
    for c in CLAIM_COLUMNS:
        if c not in df.columns:
            df[c] = None
    return df[list(CLAIM_COLUMNS)]
