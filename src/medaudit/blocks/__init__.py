"""Audit blocks: one object per analysis, tidy tables in and tidy tables out.

:data:`BLOCKS` is the one registry: the audit spec is composed from the blocks' config
models, the runner runs them in this order, the claims builder asks each for its
claims, and the report reads their titles, tables and figures from it.  Adding a block
is one module with a :class:`~medaudit.blocks.block.Block` subclass, its tests, and one
line here (``docs/block-contract.md``).
"""

from __future__ import annotations

from types import MappingProxyType

from medaudit.blocks.agreement import Agreement
from medaudit.blocks.block import Block, BlockConfig, BlockResult, NoOptions, TableSchema
from medaudit.blocks.claims import Claims
from medaudit.blocks.context import AuditContext, CohortSpec, Resampling, Study, Wide, cell_rng
from medaudit.blocks.discrimination import Discrimination
from medaudit.blocks.error_structure import ErrorStructure
from medaudit.blocks.label_uncertainty import LabelUncertainty
from medaudit.blocks.operating_points import OperatingPoints
from medaudit.blocks.planning import Planning
from medaudit.blocks.prevalence import Prevalence
from medaudit.blocks.prompts import Prompts
from medaudit.blocks.retained import Retained
from medaudit.blocks.spectrum import Spectrum
from medaudit.blocks.subgroups import Subgroups
from medaudit.blocks.transport import Transport

__all__ = ["BLOCKS", "Block", "BlockConfig", "BlockResult", "NoOptions", "TableSchema",
           "AuditContext", "CohortSpec", "Resampling", "Study", "Wide", "cell_rng", "get_block"]

#: every block, in the order an audit runs them (and the default ``blocks:`` order)
BLOCKS: MappingProxyType[str, Block] = MappingProxyType({b.name: b for b in (
    Claims(),  # declared claims first: the matrix shows them first
    Discrimination(),
    OperatingPoints(),
    Prompts(),
    Spectrum(),
    Prevalence(),
    Transport(),
    Retained(),
    Subgroups(),
    Planning(),
    LabelUncertainty(),
    ErrorStructure(),
    Agreement(),
)})


def get_block(name: str) -> Block:
    """The registered block ``name`` (a MedauditError with the closest name otherwise)."""
    from medaudit._validation import check_option

    check_option(name, tuple(BLOCKS), name="block")
    return BLOCKS[name]
