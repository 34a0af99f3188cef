"""The block contract: one object per analysis, registered once in :data:`medaudit.blocks.BLOCKS`.

A block is a subclass of :class:`Block` that declares, as class attributes, everything
the rest of the package needs to know about it:

* ``name`` — its key in the spec's ``blocks:`` list, in table file names and in
  ``results.json``; ``title`` — the heading of its report section;
* ``config`` — the pydantic model of its spec section (``config_key``, default the
  name); ``many = True`` when the section is a list of entries (``spectrum: [...]``);
  the audit spec is composed from these, so the YAML surface is the blocks' own;
* ``requires`` — the inputs it reads (``scores``, ``annotations``, ``judgments``): a
  block runs by default when the spec gives all of them;
* ``tables`` — the :class:`TableSchema` of every table it may write;
* ``figures`` — the names of the report figures drawn from its tables (the drawing
  code lives in ``medaudit.report.figures``, which a test keeps in step);
* ``claim_kinds`` — the kinds of claim its :meth:`Block.claims` states.

and implements :meth:`Block.run` (tidy tables in, tidy tables out: no file I/O, no
printing, no plotting), optionally :meth:`Block.claims` (claims read from block tables,
never recomputed), :meth:`Block.check` (names in its config that the score table
lacks) and :meth:`Block.skip` (why it cannot run on these inputs: the report says so and
no table is written).  Tables without rows are never written.
``docs/block-contract.md`` walks through adding one.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import pandas as pd

from medaudit.blocks.context import AuditContext, Study
from medaudit.io.specfile import Strict

__all__ = ["Block", "BlockConfig", "BlockResult", "TableSchema", "NoOptions"]

#: the inputs a block may require (the spec section that provides each)
INPUTS = {"scores": "a score table (`scores:`, `scores_wide:` or `simulate:`)",
          "annotations": "`annotations:`", "judgments": "`judgments:`"}


class BlockConfig(Strict):
    """Base of every block's spec section: unknown keys are errors, values never change."""


class NoOptions(BlockConfig):
    """The spec section of a block that has no options yet (``discrimination: {}``)."""


@dataclass(frozen=True)
class TableSchema:
    """A table a block writes: its name, what one row is, and the columns every row has.

    ``columns`` are the value columns beyond E and provenance that the table always
    carries when it is not empty (soft-label and optional columns may come on top);
    ``e_columns`` is False for tables whose rows are not results with an E (settings,
    bookkeeping).  ``run_seed`` is False for tables whose rows are not drawn from the run
    seed (counts over the agreement block's repeats, seeded ``first_seed + repeat``): the
    runner leaves their ``seed`` cells as the block wrote them instead of stamping the run
    seed (:func:`medaudit.blocks.rows.stamp_seed`).
    """

    name: str
    description: str
    columns: tuple[str, ...] = ()
    e_columns: bool = True
    run_seed: bool = True


@dataclass(frozen=True)
class BlockResult:
    """Named tidy tables produced by one block, with notes and its own provenance."""

    name: str
    tables: dict[str, pd.DataFrame]
    notes: tuple[str, ...] = ()
    #: what this block's numbers depend on beyond the run's settings (its own B, ...)
    provenance: dict[str, Any] = field(default_factory=dict)


class Block:
    """Base class of an audit block (see the module docstring for the contract)."""

    name: ClassVar[str]
    title: ClassVar[str]
    #: one line for the block reference (docs/spec.md) and the report
    summary: ClassVar[str] = ""
    config: ClassVar[type[BlockConfig]] = NoOptions
    #: the spec key of the config section (default: the block's name)
    config_key: ClassVar[str | None] = None
    #: the section is a list of entries, each a ``config`` (``spectrum: [...]``)
    many: ClassVar[bool] = False
    #: a ``many`` block with no entries does not run; the report says this, in words
    #: (e.g. "no `spectrum:` entries are declared (...)"); None: it runs on none
    no_entries: ClassVar[str | None] = None
    requires: ClassVar[tuple[str, ...]] = ("scores",)
    tables: ClassVar[tuple[TableSchema, ...]] = ()
    figures: ClassVar[tuple[str, ...]] = ()
    claim_kinds: ClassVar[tuple[str, ...]] = ()

    # -- what the rest of the package asks -------------------------------------------
    @classmethod
    def key(cls) -> str:
        """The spec key of this block's section."""
        return cls.config_key or cls.name

    @classmethod
    def default_config(cls) -> Any:
        """The section when the spec omits it."""
        return [] if cls.many else cls.config()

    @classmethod
    def spec_annotation(cls) -> Any:
        """The type of the spec section (a block whose section is not a model overrides this,
        e.g. a plain list of column names); its default is :meth:`default_config`."""
        return list[cls.config] if cls.many else cls.config

    @classmethod
    def table_names(cls) -> tuple[str, ...]:
        return tuple(t.name for t in cls.tables)

    def enabled(self, config: Any) -> bool:
        """Whether the block runs by default (no ``blocks:`` list) once the spec gives its inputs;
        e.g. ``subgroups`` only when its section names a column (default: always)."""
        return True

    def skip(self, ctx: AuditContext, config: Any) -> str | None:
        """Why the block cannot run on these inputs (None: it runs), in words for the report:
        e.g. "the score table has one prompt" for the prompt contrasts.  The default: a
        ``many`` block with no entries, when it declares :attr:`no_entries`."""
        if self.many and self.no_entries is not None and not config:
            return self.no_entries
        return None

    def wants(self, config: Any) -> frozenset[str]:
        """Optional context tables this config asks the loader for (``judgment_variants``)."""
        return frozenset()

    def multiplicity(self, config: Any) -> str | None:
        """The multiplicity family this block declares, in words (None: descriptive)."""
        return None

    def provenance(self, ctx: AuditContext, config: Any) -> dict[str, Any]:
        """What this block's numbers depend on beyond the run's settings (default: nothing)."""
        return {}

    # -- what a block implements ------------------------------------------------------
    def run(self, ctx: AuditContext, config: Any) -> BlockResult:
        """The block's tables from the context and its config."""
        raise NotImplementedError

    def claims(self, results: Mapping[str, BlockResult], study: Study, config: Any
               ) -> list[dict[str, Any]]:
        """Portability-matrix rows of the claims this block states (default: none)."""
        return []

    def check(self, config: Any, table: pd.DataFrame, cohorts: Sequence[str]) -> list[str]:
        """Lines naming what ``config`` refers to that ``table`` lacks (default: nothing)."""
        return []

    def __repr__(self) -> str:
        return f"<block {self.name!r}>"
