"""Independent analysis cells as Ray tasks, results gathered in item order.

``ray`` is imported when a :class:`RayBackend` is made, never when medaudit is
imported: it is the optional extra ``medaudit[ray]``.

Why results are identical to the local path: a cell is a module-level function of
its item alone (aligned arrays, options, the run seed and the cell key) and draws
from ``cell_rng(seed, *key)``; nothing depends on which worker ran it or when.
Results are put back in the order of the items, warnings raised inside a cell are
re-raised in the driver (in item order), and an exception inside a cell is re-raised
as the original exception, so a run on Ray reads exactly like a local one.

Worker death (a crashed or killed process, a lost node) is retried by Ray up to
``max_retries`` times; a cell is a pure function, so a retry recomputes the same
value.  Exceptions raised *by the cell* are deterministic and are not retried, except
the transient ones in ``retry_exceptions`` (I/O on shared storage).
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Callable, Iterable
from typing import Any

from medaudit.exceptions import MedauditError

__all__ = ["RayBackend", "require_ray", "connect", "DEFAULT_MAX_RETRIES", "TRANSIENT_EXCEPTIONS"]

log = logging.getLogger("medaudit")

#: how often a cell whose worker died is resubmitted
DEFAULT_MAX_RETRIES = 3
#: exceptions raised in a cell that are worth a retry (everything else is deterministic)
TRANSIENT_EXCEPTIONS: tuple[type[BaseException], ...] = (ConnectionError, TimeoutError)


def require_ray() -> Any:
    """Import and return ``ray``, or raise a clear error naming the extra to install."""
    try:
        import ray
    except ImportError as exc:
        raise MedauditError(
            "execution.backend 'ray' needs Ray, which is not installed here; install the optional "
            "extra with `pip install 'medaudit[ray]'` (or use `execution: {backend: local}`)."
        ) from exc
    return ray


def connect(address: str | None = None, num_workers: int | None = None) -> tuple[Any, bool]:
    """Import ``ray`` and connect; return ``(ray, owned)``, owned when a local instance was started.

    An existing connection of this process is reused (and not owned).  A local instance
    started here gets ``num_workers`` CPUs (all CPUs when None), no dashboard, and does not
    copy worker logs to the driver.
    """
    ray = require_ray()
    if ray.is_initialized():
        if address is not None:
            log.info("Ray is already initialised in this process; using that connection, not %s",
                     address)
        return ray, False
    kwargs: dict[str, Any] = {"include_dashboard": False, "configure_logging": False,
                              "log_to_driver": False}
    if address is None and num_workers is not None:
        kwargs["num_cpus"] = int(num_workers)
    ray.init(address=address, **kwargs)
    return ray, True


def _run_cell(fn: Callable[[Any], Any], item: Any) -> tuple[Any, list[tuple[Any, ...]]]:
    """Run one cell in a worker; return its value and the warnings it raised."""
    with warnings.catch_warnings(record=True) as caught:
        # every warning travels back; the driver's own filters decide what is shown
        warnings.simplefilter("always")
        value = fn(item)
    return value, [(w.category, str(w.message), w.filename, w.lineno) for w in caught]


class RayBackend:
    """Run each cell as a Ray task and gather the results in item order.

    Parameters
    ----------
    address : str or None, default=None
        Ray address to connect to (``"auto"``, ``"ray://host:10001"``).  None: use the
        Ray instance this process is already connected to, else start a local one.
    num_workers : int or None, default=None
        At most this many cells in flight at once (and, for a local instance started
        here, its number of CPUs).  None: as many as the cluster schedules.
    max_retries : int, default=3
        Resubmissions of a cell whose worker died.
    retry_exceptions : sequence of exception classes, default=TRANSIENT_EXCEPTIONS
        Exceptions raised inside a cell that are retried (others are deterministic).

    Notes
    -----
    The backend shuts Ray down on :meth:`close` only if it started the instance.  On a
    remote cluster every worker needs the same medaudit, numpy and scipy versions as
    the driver (e.g. a ``runtime_env``), or byte identity is not guaranteed.
    """

    name = "ray"

    def __init__(self, address: str | None = None, *, num_workers: int | None = None,
                 max_retries: int = DEFAULT_MAX_RETRIES,
                 retry_exceptions: Iterable[type[BaseException]] = TRANSIENT_EXCEPTIONS):
        if num_workers is not None and (isinstance(num_workers, bool) or int(num_workers) < 1):
            raise MedauditError(f"num_workers must be a positive integer or None; got {num_workers!r}.")
        if int(max_retries) < 0:
            raise MedauditError(f"max_retries must be >= 0; got {max_retries!r}.")
        self.address = address
        self.num_workers = None if num_workers is None else int(num_workers)
        self.max_retries = int(max_retries)
        ray, self._owned = connect(address, self.num_workers)
        self._ray = ray
        self._task = ray.remote(max_retries=self.max_retries,
                                retry_exceptions=list(retry_exceptions))(_run_cell)
        self._closed = False

    def map(self, fn: Callable[[Any], Any], items: Iterable[Any]) -> list[Any]:
        """Apply ``fn`` to every item as a Ray task; results in the order of ``items``.

        Parameters
        ----------
        fn : callable
            A picklable (module-level) function of one item.
        items : iterable
            The cells; each is shipped to its task.

        Returns
        -------
        list
            ``[fn(x) for x in items]``, computed on the workers.

        Raises
        ------
        Exception
            The original exception of the first failing cell in item order (what the
            local backend raises); cells after it are cancelled.
        medaudit.exceptions.MedauditError
            A cell whose worker died more than ``max_retries`` times.
        """
        if self._closed:
            raise MedauditError("this RayBackend is closed; make a new one with make_backend().")
        ray = self._ray
        items = list(items)
        n = len(items)
        if n == 0:
            return []
        fn_ref = ray.put(fn)  # shipped once, not once per cell
        window = self.num_workers or n
        pending: dict[Any, int] = {}
        out: list[Any] = [None] * n
        submitted = 0
        # The error reported is that of the first failing cell *in item order*, as on the local
        # path (which stops there): a later cell that fails sooner does not decide the message.
        failed: tuple[int, BaseException] | None = None
        try:
            while True:
                while failed is None and submitted < n and len(pending) < window:
                    pending[self._task.remote(fn_ref, items[submitted])] = submitted
                    submitted += 1
                if failed is not None:  # cells after the failure are not needed
                    for ref in [r for r, i in pending.items() if i > failed[0]]:
                        ray.cancel(ref, force=True)
                        del pending[ref]
                if not pending:
                    break
                done, _ = ray.wait(list(pending), num_returns=1)
                for ref in done:
                    i = pending.pop(ref)
                    try:
                        out[i] = self._get(ref, i, n)
                    except Exception as exc:  # noqa: BLE001 - re-raised below, in item order
                        if failed is None or i < failed[0]:
                            failed = (i, exc)
        except BaseException:
            for ref in pending:
                ray.cancel(ref, force=True)
            raise
        stop = n if failed is None else failed[0]
        values = []
        for value, caught in out[:stop]:
            # the warnings of the cells that ran before the failure, as a local run shows them
            for category, message, filename, lineno in caught:
                warnings.warn_explicit(message, category, filename, lineno)
            values.append(value)
        if failed is not None:
            raise failed[1]
        return values

    def _get(self, ref: Any, i: int, n: int) -> Any:
        ray = self._ray
        try:
            return ray.get(ref)
        except ray.exceptions.RayTaskError as exc:
            cause = getattr(exc, "cause", None)
            if isinstance(cause, BaseException):
                # the cell's own error, unchanged, so a Ray run fails like a local one
                cause.add_note(f"(raised in Ray task {i + 1} of {n})")
                raise cause from None
            raise
        except (ray.exceptions.WorkerCrashedError, ray.exceptions.NodeDiedError,
                ray.exceptions.ActorDiedError) as exc:
            raise MedauditError(f"cell {i + 1} of {n}: its Ray worker died {self.max_retries + 1} "
                                f"time(s) (max_retries={self.max_retries}); nothing was written. "
                                f"Check the workers' memory and logs. ({type(exc).__name__})") from exc

    def parallelism(self, work: float) -> int:
        """How many cells run at once: ``num_workers``, else the cluster's CPUs."""
        if self.num_workers is not None:
            return self.num_workers
        if self._closed or not self._ray.is_initialized():
            return 1
        return max(1, int(self._ray.cluster_resources().get("CPU", 1)))

    def describe(self) -> dict[str, Any]:
        """What runs the cells (for the log; never written into result tables)."""
        info: dict[str, Any] = {"backend": self.name, "address": self.address,
                                "num_workers": self.num_workers, "max_retries": self.max_retries,
                                "ray": getattr(self._ray, "__version__", "?")}
        if not self._closed and self._ray.is_initialized():
            info["cluster_cpus"] = self._ray.cluster_resources().get("CPU")
        return info

    def close(self) -> None:
        """Shut Ray down if this backend started it; idempotent."""
        if self._closed:
            return
        self._closed = True
        if self._owned and self._ray.is_initialized():
            self._ray.shutdown()

    def __enter__(self) -> RayBackend:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
