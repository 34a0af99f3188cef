"""One progress channel for a whole run: blocks, their long steps and resampling batches.

A front end (the command line's progress bar) installs one listener for the duration of
a run with :func:`listening`; the audit runner reports each block (:func:`block`), blocks
report their long steps (:func:`step`, via ``AuditContext.tick``) and the resampling
engines report each batch of replicates (:func:`replicates`).  A
:class:`contextvars.ContextVar` keeps the listener local to the calling thread or task,
so library callers that install nothing pay one lookup per event and every function
stays a pure function of its inputs (nothing about progress is threaded through
signatures or stored in results).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Protocol

__all__ = ["Listener", "listening", "block", "step", "replicates"]


class Listener(Protocol):
    """What a progress display implements (every method may ignore what it is told)."""

    def block(self, name: str) -> None: ...

    def step(self, text: str) -> None: ...

    def replicates(self, kind: str, done: int, total: int) -> None: ...


_LISTENER: ContextVar[Listener | None] = ContextVar("medaudit_progress", default=None)


@contextmanager
def listening(listener: Listener) -> Iterator[Listener]:
    """Send every progress event inside the ``with`` block to ``listener``."""
    token = _LISTENER.set(listener)
    try:
        yield listener
    finally:
        _LISTENER.reset(token)


def block(name: str) -> None:
    """A block (or the write phase) starts."""
    if (listener := _LISTENER.get()) is not None:
        listener.block(name)


def step(text: str) -> None:
    """A long step inside a block starts (e.g. one cohort's bootstrap)."""
    if (listener := _LISTENER.get()) is not None:
        listener.step(text)


def replicates(kind: str, done: int, total: int) -> None:
    """``done`` of ``total`` replicates of the current resampling (``kind``) are drawn."""
    if (listener := _LISTENER.get()) is not None:
        listener.replicates(kind, done, total)
