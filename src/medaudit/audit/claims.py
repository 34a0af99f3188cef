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
from medaudit.exceptions import SchemaError

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
        rows += [{**r, "origin": r.get("origin") or name, "_block": name} for r in got]
    _check_ids(rows)
    for r in rows:
        del r["_block"]
    if not rows:
        return pd.DataFrame(columns=list(CLAIM_COLUMNS))
    df = pd.DataFrame(rows)
    for c in CLAIM_COLUMNS:
        if c not in df.columns:
            df[c] = None
    return df[list(CLAIM_COLUMNS)]


def _check_ids(rows: list[dict[str, Any]]) -> None:
    """Refuse a declared claim whose id a generated claim of this run also has.

    Two different claims under one id would make the matrix ambiguous, and a claims file
    exported from it would be refused as damaged (ids are unique there); only the run knows
    which ids its generated claims take, so this is checked here, before anything is written.
    """
    declared = {r["claim_id"] for r in rows if r["_block"] == "claims"}
    clash = sorted({r["claim_id"] for r in rows if r["_block"] != "claims"} & declared)
    if clash:
        raise SchemaError(
            f"claims.declared: the id {clash[0]!r} is also the id of a generated claim of this "
            f"audit{f' (and {len(clash) - 1} more)' if len(clash) > 1 else ''}; give the declared "
            "claim another `id:` (generated ids are a letter and a number: L01, R02, T01, ...), "
            "or leave `claims.generate` off.")
