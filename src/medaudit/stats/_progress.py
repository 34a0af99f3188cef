"""Per-batch progress of resampling loops, without threading a callback through every signature.

A front end (the command line's progress bar) installs a listener for the duration of a
run with :func:`replicate_progress`; the resampling engines call :func:`report` after each
batch.  A :class:`contextvars.ContextVar` keeps the listener local to the calling thread
or task, so library callers that install nothing pay one lookup per batch and the
statistics stay pure functions of their inputs.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

__all__ = ["replicate_progress", "report"]

_LISTENER: ContextVar[Callable[[str, int, int], None] | None] = ContextVar(
    "medaudit_replicate_progress", default=None)


@contextmanager
def replicate_progress(listener: Callable[[str, int, int], None]) -> Iterator[None]:
    """Call ``listener(kind, done, total)`` after each resampling batch inside the block.

    ``kind`` is ``"bootstrap"`` or ``"permutation"``; ``done`` counts replicates drawn so
    far out of ``total`` in the current resampling.
    """
    token = _LISTENER.set(listener)
    try:
        yield
    finally:
        _LISTENER.reset(token)


def report(kind: str, done: int, total: int) -> None:
    """Tell the installed listener (if any) that ``done`` of ``total`` replicates are drawn."""
    listener = _LISTENER.get()
    if listener is not None:
        listener(kind, done, total)
