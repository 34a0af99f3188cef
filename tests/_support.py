"""What block tests share: a context that remembers its spec, running a block, selecting rows.

A block reads an :class:`~medaudit.blocks.context.AuditContext` and its own config, never
the spec; tests, though, build both from a spec.  :class:`SpecContext` is that context
with the spec kept beside it, so a test can say ``run(discrimination, ctx)`` (the spec's
config of that block is passed) and still read ``ctx.spec``.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import pandas as pd

from medaudit.audit.run import run_block
from medaudit.audit.spec import AuditSpec
from medaudit.blocks import BLOCKS
from medaudit.blocks.block import BlockResult
from medaudit.blocks.context import AuditContext

__all__ = ["SpecContext", "context", "run", "select", "one", "snapshot", "fails", "HANG"]

#: seconds within which a refusal that guards against a hang (an alias bomb, a 10 MB
#: scalar, a billion resamples) must come: what it guards against takes minutes or never
#: ends, and a loaded CI machine must not fail a refusal that took two seconds there
HANG = 10.0


@dataclass(frozen=True)
class SpecContext(AuditContext):
    """An :class:`AuditContext` built from ``spec`` (tests only)."""

    spec: AuditSpec | None = None


def context(spec: AuditSpec, *, scores: pd.DataFrame | None = None, **tables: Any) -> SpecContext:
    """The context of ``spec`` over tables already validated (as ``audit.context.make_context``)."""
    from medaudit.audit.context import _EMPTY_SCORES

    return SpecContext(scores=_EMPTY_SCORES.copy() if scores is None else scores,
                       study=spec.study(), resampling=spec.resampling(),
                       annotation_rules=spec.annotations, spec=spec, **tables)


def run(block: ModuleType | str, ctx: SpecContext, spec: AuditSpec | None = None) -> BlockResult:
    """Run ``block`` (its module or name) on ``ctx`` with the config of ``spec`` (default ``ctx.spec``)."""
    name = block if isinstance(block, str) else block.NAME
    spec = spec if spec is not None else ctx.spec
    if spec is None:
        raise TypeError("run() needs a SpecContext or an explicit spec")
    assert name in BLOCKS
    return run_block(spec, name, ctx)


def select(df: pd.DataFrame, **kw: Any) -> pd.DataFrame:
    """The rows of ``df`` whose columns equal the given values."""
    m = pd.Series(True, index=df.index)
    for k, v in kw.items():
        m &= df[k] == v
    return df[m]


def one(df: pd.DataFrame, **kw: Any) -> pd.Series:
    """The one row of ``df`` whose columns equal the given values (fails unless exactly one)."""
    got = select(df, **kw)
    assert len(got) == 1, (kw, len(got))
    return got.iloc[0]


def snapshot(d: Path) -> dict[str, tuple[bytes | None, int]]:
    """Every entry under ``d`` (hidden ones too): file bytes (None for folders) and mode."""
    out = {}
    for root, dirs, files in os.walk(d):
        for name in dirs + files:
            p = Path(root, name)
            st = p.lstat()
            out[str(p.relative_to(d))] = (p.read_bytes() if stat.S_ISREG(st.st_mode) else None,
                                          st.st_mode)
    return out


def fails(argv: list[Any], capsys: Any) -> str:
    """Run the command line; it must exit 2 with one error line and no traceback; the line."""
    from medaudit.cli.main import main

    rc = main([str(a) for a in argv])
    cap = capsys.readouterr()
    lines = cap.err.strip().splitlines()
    assert rc == 2, cap.err
    assert len(lines) == 1 and lines[0].startswith("medaudit: error: "), cap.err
    assert "Traceback" not in cap.err
    return lines[0]
