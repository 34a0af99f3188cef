"""Sub-commands of ``medaudit`` for training (registered by :func:`medaudit.cli.main.build_parser`)."""

from __future__ import annotations

import argparse

__all__ = ["register"]


def register(sub: argparse._SubParsersAction) -> None:
    """Add this module's sub-commands to the ``medaudit`` parser (none yet)."""
