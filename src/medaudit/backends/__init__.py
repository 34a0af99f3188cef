"""Execution backends: where the independent analysis cells of an audit run.

A backend has ``map(fn, items) -> list`` (results in the order of ``items``),
``describe() -> dict`` and ``close()``.  Every cell draws from its own generator
(:func:`medaudit.blocks.context.cell_rng`, keyed by the run seed and the cell), so the
outcome is the same on every backend and with any number of workers.

``local`` (the default) runs cells in order in this process.  ``ray`` submits each
cell as a Ray task; it needs the optional extra (``pip install 'medaudit[ray]'``) and
imports ``ray`` only when such a backend is made.
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
    num_workers: int | None = Field(None, ge=1)


def make_backend(spec: ExecutionSpec | None = None) -> Any:
    """The backend an ``execution:`` section asks for.

    Parameters
    ----------
    spec : ExecutionSpec or None
        ``backend`` (``"local"`` or ``"ray"``), ``address`` (a Ray address such as
        ``"auto"`` or ``"ray://host:10001"``; None starts a local Ray instance unless
        this process is already connected) and ``num_workers`` (at most this many cells
        run at once; None: as many as the cluster has CPUs).  None means local.

    Returns
    -------
    LocalBackend or medaudit.backends.ray_backend.RayBackend
        Close it with ``close()`` (or use it as a context manager) when the run ends.

    Raises
    ------
    medaudit.exceptions.MedauditError
        ``backend: ray`` when Ray is not installed (the message names the extra).
    """
    if spec is None or spec.backend == "local":
        return LocalBackend()
    if spec.backend == "ray":
        from medaudit.backends.ray_backend import RayBackend

        return RayBackend(address=spec.address, num_workers=spec.num_workers)
    from medaudit.exceptions import MedauditError

    raise MedauditError(f"execution.backend must be 'local' or 'ray'; got {spec.backend!r}.")
