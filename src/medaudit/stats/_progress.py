"""Per-batch progress of resampling loops, on the one channel of :mod:`medaudit.progress`.

The resampling engines call :func:`report` after each batch.  :func:`replicate_progress`
installs a plain ``listener(kind, done, total)`` callable for code that wants replicate
events only (tests, notebooks); a front end that wants every event uses
:func:`medaudit.progress.listening`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

from medaudit import progress

__all__ = ["replicate_progress", "report"]


class _Replicates:
    """Adapts a ``listener(kind, done, total)`` callable to :class:`medaudit.progress.Listener`."""

    def __init__(self, listener: Callable[[str, int, int], None]):
        self._listener = listener

    def block(self, name: str) -> None:
        pass

    def step(self, text: str) -> None:
        pass

    def replicates(self, kind: str, done: int, total: int) -> None:
        self._listener(kind, done, total)


@contextmanager
def replicate_progress(listener: Callable[[str, int, int], None]) -> Iterator[None]:
    """Call ``listener(kind, done, total)`` after each resampling batch inside the block.

    ``kind`` is ``"bootstrap"`` or ``"permutation"``; ``done`` counts replicates drawn so
    far out of ``total`` in the current resampling.
    """
    with progress.listening(_Replicates(listener)):
        yield


def report(kind: str, done: int, total: int) -> None:
    """Tell the installed listener (if any) that ``done`` of ``total`` replicates are drawn."""
    progress.replicates(kind, done, total)
