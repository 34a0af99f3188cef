"""The default backend: cells in this process, or in a pool of worker processes on this machine.

Why a pool gives the serial bytes: a cell is a module-level function of its item alone
(aligned arrays, options, the run seed and the cell key) and draws from its own
generator, so nothing depends on which process ran it or when.  Results come back in
the order of the items, the warnings a cell raised are re-raised here in item order,
and the first failing cell *in item order* decides the exception, as in a serial run.

When the pool is used (``workers=None``, the default):

* only with at least :data:`MIN_CORES` usable cores (``os.sched_getaffinity``), one
  worker per usable core;
* only for a map whose estimated work (:func:`work_of`: the elements of a cell's arrays
  times its number of resamples, summed over the cells) is at least :data:`MIN_POOL_WORK`,
  about a fifth of a second of one core; a smaller map costs less in process than the
  round trip of its cells to a worker;
* and only for two or more cells.

``workers=1`` never starts a pool; ``workers=N`` (N >= 2) always uses N processes for a
map of two or more cells.  The pool is started on the first map that uses it and kept
until :meth:`LocalBackend.close`.
"""

from __future__ import annotations

import dataclasses
import functools
import multiprocessing
import os
import signal
import sys
import threading
import time
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any

import numpy as np

from medaudit import progress
from medaudit.exceptions import MedauditError

__all__ = ["LocalBackend", "fork_pool", "usable_cores", "work_of", "MIN_CORES", "MIN_POOL_WORK"]

#: the default pool needs at least this many usable cores
MIN_CORES = 2
#: estimated work (array elements x resamples) below which a map runs in process by default;
#: at about 1e8 per second per core for the paired bootstrap, 2e7 is ~0.2 s of one core,
#: several times what sending the cells to a worker and their results back costs
MIN_POOL_WORK = 2e7


def usable_cores() -> int:
    """The cores this process may run on (its CPU affinity where the OS has one)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - macOS and Windows have no affinity call
        return os.cpu_count() or 1


def _elements(x: Any, depth: int = 0) -> int:
    if isinstance(x, np.ndarray):
        return int(x.size)
    if depth > 2:
        return 0
    if isinstance(x, Mapping):
        return sum(_elements(v, depth + 1) for v in x.values())
    if isinstance(x, (tuple, list)):
        return sum(_elements(v, depth + 1) for v in x)
    if dataclasses.is_dataclass(x) and not isinstance(x, type):
        return sum(_elements(getattr(x, f.name), depth + 1) for f in dataclasses.fields(x))
    return 0


def work_of(fn: Callable[[Any], Any], item: Any) -> float:
    """Estimated cost of ``fn(item)``: the item's ``work`` attribute when it has one, else
    the elements of its arrays (fields, mappings and tuples, a few levels deep) times its
    number of resamples (the item's own ``n_resamples``, else that of the ``resampling``
    the function is bound to, else 1) times its ``work_factor`` (default 1).

    Only the order of magnitude matters: it decides whether a map pays for the pool and
    which cells are sent first (the largest), never what a cell computes.
    """
    own = getattr(item, "work", None)
    if own is not None:
        return float(own() if callable(own) else own)
    b = getattr(item, "n_resamples", None)
    if not b:
        res = fn.keywords.get("resampling") if isinstance(fn, functools.partial) else None
        b = getattr(res, "n_resamples", None) or 1
    # a cell that does several resamplings of its arrays says how many (``work_factor``)
    return float(_elements(item)) * float(b) * float(getattr(item, "work_factor", 1.0))


class _Quiet:
    """A progress listener that drops every event: a worker has no display of its own."""

    def block(self, name: str) -> None:
        pass

    def step(self, text: str) -> None:
        pass

    def replicates(self, kind: str, done: int, total: int) -> None:
        pass


def _run_cell(fn: Callable[[Any], Any], item: Any) -> tuple[Any, list[tuple[Any, ...]]]:
    """Run one cell in a worker; return its value and the warnings it raised."""
    with progress.listening(_Quiet()), warnings.catch_warnings(record=True) as caught:
        # every warning travels back; the caller's own filters decide what is shown
        warnings.simplefilter("always")
        value = fn(item)
    return value, [(w.category, str(w.message), w.filename, w.lineno) for w in caught]


def _watch_parent(parent: int) -> None:
    """In a worker: exit as soon as the process that started the pool is gone.

    A killed audit (``kill -9``) cannot stop its workers, and they would wait for work
    forever (each holds the task queue open itself); a daemon thread checks twice a
    second that the parent is still there.  Ctrl-C (SIGINT, sent to the whole process
    group by a terminal) is left to the parent, which stops the pool and says so in one
    line: a worker would print a traceback of its own.
    """
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # the parent turns SIGTERM into an unwinding exception (cli.main); a worker forked with
    # that handler ends at SIGTERM as a process should, and the parent sees its pool break
    signal.signal(signal.SIGTERM, signal.SIG_DFL)

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(0.5)
        os._exit(1)

    threading.Thread(target=watch, name="medaudit-parent-watch", daemon=True).start()


def fork_pool(workers: int) -> ProcessPoolExecutor | None:
    """A pool of ``workers`` processes forked from this one on first submit, or None where
    fork is not available (the caller then works in process).

    Forked workers inherit this process's modules and data (a function run there may read
    module globals set before the first submit).  Its submits silence the at-fork warnings of threaded
    libraries."""
    if "fork" not in multiprocessing.get_all_start_methods() or sys.platform == "darwin":
        return None
    return _QuietPool(max_workers=int(workers), mp_context=multiprocessing.get_context("fork"),
                      initializer=_watch_parent, initargs=(os.getpid(),))


class _QuietPool(ProcessPoolExecutor):
    """A fork pool whose submits silence the at-fork warnings of threaded libraries.

    A worker is forked at the first submit; a library that registered an at-fork hook
    (JAX) warns about forking a threaded process, which is harmless here (the worker only
    runs numpy code) but would be an error under ``-W error``.
    """

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", "os.fork", RuntimeWarning)
            warnings.filterwarnings("ignore", ".*fork.*", DeprecationWarning)
            return super().submit(fn, *args, **kwargs)


class LocalBackend:
    """Run cells on this machine: in order in this process, or in a pool of processes.

    Parameters
    ----------
    workers : int or None, default=1
        1: every cell in order in the calling process (no copies).  N >= 2: a pool of N
        processes for every map of two or more cells.  None: one process per usable core
        when there are at least :data:`MIN_CORES` and a map's estimated work reaches
        ``min_work`` (see the module docstring); otherwise in process.
    min_work : float, default=MIN_POOL_WORK
        The estimated work (:func:`work_of`) from which ``workers=None`` uses the pool.

    Examples
    --------
    >>> with LocalBackend() as b:
    ...     b.map(abs, [-2, 3])
    [2, 3]
    """

    name = "local"

    def __init__(self, workers: int | None = 1, *, min_work: float = MIN_POOL_WORK):
        if workers is not None and (isinstance(workers, bool) or int(workers) < 1):
            raise MedauditError(f"execution.num_workers must be a positive integer or null (one "
                                f"worker per usable core); got {workers!r}.")
        self.requested = None if workers is None else int(workers)
        self.workers = usable_cores() if workers is None else int(workers)
        if workers is None and self.workers < MIN_CORES:
            self.workers = 1
        self.min_work = float(min_work)
        self._pool: ProcessPoolExecutor | None = None
        self._closed = False

    def parallelism(self, work: float) -> int:
        """How many cells of a map with this much estimated work run at once (1: in process)."""
        if self.workers < 2 or (self.requested is None and work < self.min_work):
            return 1
        return self.workers

    def map(self, fn: Callable[[Any], Any], items: Iterable[Any]) -> list[Any]:
        """``[fn(x) for x in items]``, in this process or on the pool; results in item order.

        Raises
        ------
        Exception
            The exception of the first failing cell in item order, unchanged (cells after
            it are cancelled where they have not started).
        medaudit.exceptions.MedauditError
            A worker process died (killed, out of memory); nothing was written.
        """
        if self._closed:
            raise MedauditError("this LocalBackend is closed; make a new one with make_backend().")
        items = list(items)
        if len(items) < 2 or self.workers < 2:
            return [fn(x) for x in items]
        work = [work_of(fn, x) for x in items]
        if self.parallelism(sum(work)) < 2:
            return [fn(x) for x in items]
        return self._pool_map(fn, items, work)

    def _pool_map(self, fn: Callable[[Any], Any], items: list[Any], work: Sequence[float]
                  ) -> list[Any]:
        pool = self._start()
        # the largest cells first: a free worker then never waits on a large cell sent last
        order = sorted(range(len(items)), key=lambda i: (-work[i], i))
        futures: dict[int, Future] = {}
        try:
            for i in order:
                futures[i] = pool.submit(_run_cell, fn, items[i])
        except BaseException:
            for f in futures.values():
                f.cancel()
            raise
        out = []
        for i in range(len(items)):
            f = futures[i]
            try:
                value, caught = f.result()
            except BrokenProcessPool as exc:
                self._discard()
                raise MedauditError(f"cell {i + 1} of {len(items)}: a worker process of the local "
                                    "pool died (killed, or out of memory); nothing was written. "
                                    "Rerun with execution: {num_workers: 1} to run in process."
                                    ) from exc
            except KeyboardInterrupt:
                # the running cells are abandoned, not waited for: the run is being stopped
                self._discard(terminate=True)
                raise
            except BaseException:
                for g in futures.values():
                    g.cancel()
                raise
            # the warnings of the cells before a failure, in item order, as a serial run shows them
            for category, message, filename, lineno in caught:
                warnings.warn_explicit(message, category, filename, lineno)
            out.append(value)
        return out

    def _start(self) -> ProcessPoolExecutor:
        if self._pool is None:
            # fork where the platform has it (no re-import: the parent's modules are
            # already loaded); spawn elsewhere
            self._pool = fork_pool(self.workers) or _QuietPool(
                max_workers=self.workers, mp_context=multiprocessing.get_context("spawn"),
                initializer=_watch_parent, initargs=(os.getpid(),))
        return self._pool

    def _discard(self, *, terminate: bool = False) -> None:
        pool, self._pool = self._pool, None
        if pool is not None:
            if terminate:  # stop the workers now (their cells' results are not wanted)
                for proc in list((getattr(pool, "_processes", None) or {}).values()):
                    proc.terminate()
            pool.shutdown(wait=False, cancel_futures=True)

    def describe(self) -> dict[str, Any]:
        """What ran the cells (for the log; never written into result tables)."""
        return {"backend": self.name, "workers": self.workers,
                "num_workers": self.requested, "min_work": self.min_work}

    def close(self) -> None:
        """Stop the pool (if one was started); idempotent."""
        self._closed = True
        pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)

    def __getstate__(self) -> dict[str, Any]:
        # a context that carries the backend may be pickled (checkpoints, Ray); the pool stays
        state = dict(self.__dict__)
        state["_pool"] = None
        return state

    def __enter__(self) -> LocalBackend:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
