"""Progress for long steps: a rich bar on a terminal, plain lines otherwise, nothing with --quiet."""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

__all__ = ["audit_progress"]


class _Plain:
    """One line per block (and per step with --verbose) on stderr, with elapsed seconds."""

    def __init__(self, total: int, verbose: bool):
        self.total, self.verbose, self.i, self.t0 = total, verbose, 0, time.perf_counter()

    def block(self, name: str) -> None:
        self.i += 1
        print(f"medaudit: [{self.i}/{self.total}] {name} "
              f"(t = {time.perf_counter() - self.t0:.1f} s)", file=sys.stderr, flush=True)

    def step(self, text: str) -> None:
        if self.verbose:
            print(f"medaudit:        {text}", file=sys.stderr, flush=True)

    def replicates(self, kind: str, done: int, total: int) -> None:
        # one line per finished resampling (not per batch) keeps a log readable
        if self.verbose and done == total:
            print(f"medaudit:          {kind}: {total} replicates drawn", file=sys.stderr, flush=True)


class _Rich:
    """A rich progress bar over the blocks whose description follows each step."""

    def __init__(self, progress: Any, total: int):
        self.progress = progress
        self.task = progress.add_task("starting", total=total)
        # a second bar for the replicates of the resampling in progress (per batch)
        self.reps = progress.add_task("replicates", total=1, visible=False)
        self.started = False

    def block(self, name: str) -> None:
        if self.started:
            self.progress.advance(self.task)
        self.started = True
        self.progress.update(self.task, description=name)

    def step(self, text: str) -> None:
        self.progress.update(self.task, description=text)

    def replicates(self, kind: str, done: int, total: int) -> None:
        self.progress.update(self.reps, completed=done, total=total, description=kind,
                             visible=done < total)

    def finish(self) -> None:
        if self.started:
            self.progress.advance(self.task)


@contextmanager
def audit_progress(total: int, *, quiet: bool, verbose: bool) -> Iterator[Any]:
    """Yield an object with ``block(name)`` and ``step(text)``; chooses the display."""
    if quiet:
        class _Null:
            def block(self, name: str) -> None: ...
            def step(self, text: str) -> None: ...
            def replicates(self, kind: str, done: int, total: int) -> None: ...
        yield _Null()
        return
    if sys.stderr.isatty():
        try:
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
        except ImportError:  # pragma: no cover - rich is part of the audit extra
            pass
        else:
            cols = (TextColumn("[bold]medaudit[/]"), BarColumn(), MofNCompleteColumn(),
                    TimeElapsedColumn(), TextColumn("{task.description}"))
            with Progress(*cols, transient=False) as progress:
                bar = _Rich(progress, total)
                yield bar
                bar.finish()
            return
    yield _Plain(total, verbose)
