"""Execution backends: where the independent analysis cells of an audit run.

A backend has ``map(fn, items) -> list`` (results in the order of ``items``),
``describe() -> dict`` and ``close()``.  Every cell draws from its own generator
(:func:`medaudit.blocks.context.cell_rng`, keyed by the run seed and the cell), so the
outcome is the same on every backend and with any number of workers.

``local`` (the default) runs cells on this machine: in order in this process, or in a
pool of worker processes (``num_workers``; by default one per usable core when there are
two or more and a map's work pays for the pool, see :mod:`medaudit.backends.local`).
``ray`` submits each cell as a Ray task; it needs the optional extra (``pip install
'medaudit[ray]'``) and imports ``ray`` only when such a backend is made.

A backend may also say how many cells of a map run at once (``parallelism(work)``);
the cell runners use it to cut a large cell into replicate ranges that reproduce the
serial draws (:func:`medaudit.blocks.cells.run_cells`).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from medaudit.backends.local import LocalBackend
from medaudit.io.specfile import Strict

__all__ = ["ExecutionSpec", "LocalBackend", "make_backend", "RAY_EXTRA"]

#: the optional extra that installs Ray
RAY_EXTRA = "medaudit[ray]"


class ExecutionSpec(Strict):
    """The ``execution:`` spec section: where independent cells run (this process or Ray)."""

    backend: Literal["local", "ray"] = "local"
    #: Ray address ("auto", "ray://host:10001"); None starts a local Ray instance
    address: str | None = None
    #: cells run at once. local: 1 = in this process, N = a pool of N processes, null = one
    #: process per usable core when there are 2 or more and the work pays for the pool;
    #: ray: null = as many as the cluster has CPUs
    num_workers: int | None = Field(None, ge=1)


def make_backend(spec: ExecutionSpec | None = None) -> Any:
    """The backend an ``execution:`` section asks for.

    Parameters
    ----------
    spec : ExecutionSpec or None
        ``backend`` (``"local"`` or ``"ray"``), ``address`` (a Ray address such as
        ``"auto"`` or ``"ray://host:10001"``; None starts a local Ray instance unless
        this process is already connected) and ``num_workers`` (at most this many cells
        run at once; local: 1 in this process, N a pool of N processes, None one process
        per usable core when there are two or more and a map's work pays for the pool;
        Ray: None as many as the cluster has CPUs).  None means local with its defaults.

    Returns
    -------
    LocalBackend or medaudit.backends.ray_backend.RayBackend
        Close it with ``close()`` (or use it as a context manager) when the run ends.

    Raises
    ------
    medaudit.exceptions.MedauditError
        ``backend: ray`` when Ray is not installed (the message names the extra).
    """
    if spec is None:
        return LocalBackend(None)
    if spec.backend == "local":
        return LocalBackend(spec.num_workers)
    if spec.backend == "ray":
        from medaudit.backends.ray_backend import RayBackend

        return RayBackend(address=spec.address, num_workers=spec.num_workers)
    from medaudit.exceptions import MedauditError

    raise MedauditError(f"execution.backend must be 'local' or 'ray'; got {spec.backend!r}.")
