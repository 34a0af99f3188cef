"""Atomic output: a run writes into a temporary sibling directory that is renamed at the end.

A run that fails leaves nothing half-done: the temporary directory is removed and
an existing output directory is only replaced once the new one is complete.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

__all__ = ["atomic_directory", "atomic_write_bytes", "write_json", "file_sha256"]


@contextlib.contextmanager
def atomic_directory(target: str | os.PathLike[str], *, overwrite: bool = False) -> Iterator[Path]:
    """Yield a temporary directory that becomes ``target`` only if the block succeeds.

    Parameters
    ----------
    target : path
        Final output directory.
    overwrite : bool, default=False
        Replace an existing ``target``; otherwise an existing one is an error.
    """
    target = Path(target)
    if target.exists() and not overwrite:
        raise FileExistsError(f"output directory {str(target)!r} exists; choose another --out or "
                              "pass --overwrite.")
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.tmp-", dir=target.parent))
    try:
        yield tmp
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    if target.exists():
        old = target.with_name(f".{target.name}.old-{os.getpid()}")
        os.replace(target, old)
        os.replace(tmp, target)
        shutil.rmtree(old, ignore_errors=True)
    else:
        os.replace(tmp, target)


def _json_default(obj: Any) -> Any:
    import numpy as np

    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    if isinstance(obj, Path):
        return str(obj)
    raise TypeError(f"cannot serialise {type(obj).__name__} to JSON")


def _nan_to_none(obj: Any) -> Any:
    if isinstance(obj, float) and not math.isfinite(obj):
        return None if math.isnan(obj) else ("inf" if obj > 0 else "-inf")
    if isinstance(obj, dict):
        return {str(k): _nan_to_none(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_nan_to_none(v) for v in obj]
    return obj


def write_json(path: str | os.PathLike[str], data: Any) -> None:
    """Write ``data`` as deterministic JSON (sorted keys; NaN → null, inf → "inf")."""
    text = json.dumps(_nan_to_none(json.loads(json.dumps(data, default=_json_default))),
                      sort_keys=True, indent=2, allow_nan=False)
    atomic_write_bytes(path, (text + "\n").encode("utf-8"))


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes, *, prefix: str | None = None,
                       suffix: str = ".tmp", durable: bool = False) -> None:
    """Write ``data`` to ``path`` via a temporary file in the same folder and a rename.

    A reader (or a resumed run) sees the old file or the new one, never half of one.
    ``prefix`` names the temporary file (a cache uses it to tell a live writer's file from
    a dead one's); ``durable=True`` also syncs the folder so the rename survives a crash.
    """
    path = Path(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=prefix or f".{path.name}.", suffix=suffix)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    if durable:  # make the rename itself durable (POSIX); not possible on every platform
        try:
            dfd = os.open(path.parent, os.O_RDONLY)
        except OSError:
            return
        try:
            os.fsync(dfd)
        except OSError:
            pass
        finally:
            os.close(dfd)


def file_sha256(path: str | os.PathLike[str]) -> str:
    """SHA-256 of a file's bytes (input provenance)."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()
