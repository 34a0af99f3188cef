"""The portability matrix (paper 000 M0.1): declared claims first, then every block's generated claims.

Declared claims (``claims.declared``, :mod:`medaudit.blocks.claims`) come first; the
generated claims that ``claims.generate`` keeps follow (default: every kind when nothing is
declared, none when something is).  Each registered block states its own claims from the
block tables
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
    keep = spec.claims.generated_kinds()
    rows: list[dict[str, Any]] = []
    for name, block in BLOCKS.items():
        got = block.claims(results, study, spec.block_config(name))
        if name != "claims" and keep is not None:
            got = [r for r in got if r.get("kind") in keep]
        rows += [{**r, "origin": r.get("origin") or name} for r in got]
    if not rows:
        return pd.DataFrame(columns=list(CLAIM_COLUMNS))
    df = pd.DataFrame(rows)
    for c in CLAIM_COLUMNS:
        if c not in df.columns:
            df[c] = None
    return df[list(CLAIM_COLUMNS)]
