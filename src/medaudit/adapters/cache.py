"""An embedding cache that survives a killed run (methods.md M0.6: images encoded once per model).

Embeddings are keyed by ``(model, revision, processor, image SHA-256)``: the first three
name a *namespace* directory, the image digest names the row.  Each batch of new
embeddings is one shard file, written to a temporary name and renamed into place
(``os.replace`` is atomic on POSIX and Windows), so after a kill every shard on disk is
complete and a rerun recomputes only the batches that never reached the disk.  Two images
with identical bytes share one embedding.

Several processes (Ray workers) may write into one cache at the same time: a temporary
file carries its writer's process id and host, and only temporaries of writers that are
gone (same host, process dead) or older than a day are removed as debris of a killed run.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
import socket
import time
import warnings
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from medaudit.exceptions import MedauditError
from medaudit.io.output import atomic_write_bytes

__all__ = ["EmbeddingCache", "namespace_key", "bytes_sha256"]

#: what an embedding was computed from; part of every namespace, so a change of it leaves
#: the embeddings of before unread.  2: images of more than 8 bits are mapped to 8 bits by
#: :mod:`medaudit.imaging.pixels` before the processor (1: Pillow clipped them at 255)
_FORMAT = 2
#: a temporary file older than this is debris whatever its writer (seconds)
_STALE_AFTER = 24 * 3600
_HOST = hashlib.sha256(socket.gethostname().encode("utf-8")).hexdigest()[:8]
_TMP = re.compile(r"^\.tmp-(\d+)-([0-9a-f]{8})-")


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OSError):  # exists but not ours, or the check is unsupported
        return True
    return True


def _is_debris(path: Path, now: float) -> bool:
    """A temporary file whose writer is gone: same host and a dead pid, or older than a day."""
    try:
        if now - path.stat().st_mtime > _STALE_AFTER:
            return True
    except FileNotFoundError:  # its writer just renamed it into place
        return False
    m = _TMP.match(path.name)
    return m is not None and m.group(2) == _HOST and not _pid_alive(int(m.group(1)))


def bytes_sha256(data: bytes) -> str:
    """Hex SHA-256 of ``data`` (the image part of a cache key)."""
    return hashlib.sha256(data).hexdigest()


def namespace_key(model: str, revision: str, processor: str) -> str:
    """Directory name for one (model, revision, processor) triple (first 24 hex of a SHA-256)."""
    raw = json.dumps({"model": model, "revision": revision, "processor": processor,
                      "format": _FORMAT}, sort_keys=True)
    return hashlib.sha256(raw.encode("utf-8")).hexdigest()[:24]


class EmbeddingCache:
    """Image embeddings of one (model, revision, processor), stored as atomic shard files.

    Parameters
    ----------
    root : path
        Cache directory (created when missing); several models may share it.
    model, revision, processor : str
        The namespace.  Change any of them and nothing cached under the old one is reused.

    Notes
    -----
    A shard is ``shard-<digest>.npz`` holding ``digests`` (image SHA-256 strings) and
    ``embeddings`` (float32, one row per digest).  Files that start with ``.tmp-`` are
    writes in progress or unfinished writes of a killed run; they are never read, and
    removed once their writer is gone.  A shard that cannot be read is reported with a
    warning naming it and its images are recomputed.  ``namespace.json`` records the key;
    a directory whose record disagrees raises rather than serve another model's rows.

    Embeddings are stored as computed: a cache filled with another batch size or device
    may differ from a fresh computation in the last float32 bits (see ``ScoringResult``).
    """

    def __init__(self, root: str | os.PathLike[str], *, model: str, revision: str, processor: str):
        self.namespace = {"model": model, "revision": revision, "processor": processor,
                          "format": _FORMAT}
        self.directory = Path(root) / namespace_key(model, revision, processor)
        self.directory.mkdir(parents=True, exist_ok=True)
        meta = self.directory / "namespace.json"
        if not meta.exists():
            self._atomic_write_bytes(meta, json.dumps(self.namespace, sort_keys=True,
                                                      indent=2).encode("utf-8"), suffix=".json")
        else:
            try:
                recorded = json.loads(meta.read_text(encoding="utf-8"))
            except (OSError, ValueError) as exc:
                raise MedauditError(f"embedding cache {self.directory}: namespace.json cannot be "
                                    f"read ({exc}); delete the directory and rerun.") from exc
            if recorded != self.namespace:
                raise MedauditError(f"embedding cache {self.directory}: namespace.json records "
                                    f"{recorded}, not {self.namespace}; delete the directory and "
                                    "rerun.")
        self._rows: dict[str, NDArray[np.float32]] = {}
        self._dim: int | None = None
        self._load()

    # -- reading ---------------------------------------------------------------------------
    def _load(self) -> None:
        now = time.time()
        for tmp in sorted(self.directory.glob(".tmp-*")):
            # another live process may be writing it: remove only a dead writer's debris
            if _is_debris(tmp, now):
                tmp.unlink(missing_ok=True)
        for shard in sorted(self.directory.glob("shard-*.npz")):
            try:
                with np.load(shard, allow_pickle=False) as z:
                    digests, emb = z["digests"], z["embeddings"]
            except Exception as exc:  # noqa: BLE001 - any unreadable shard is reported, then recomputed
                warnings.warn(f"embedding cache: shard {shard} cannot be read ({exc}); its images "
                              "will be encoded again.", UserWarning, stacklevel=3)
                continue
            if emb.ndim != 2 or emb.shape[0] != digests.shape[0]:
                warnings.warn(f"embedding cache: shard {shard} is malformed (shape {emb.shape}); "
                              "its images will be encoded again.", UserWarning, stacklevel=3)
                continue
            self._check_dim(int(emb.shape[1]), str(shard))
            for d, row in zip(digests.tolist(), emb, strict=True):
                self._rows[str(d)] = row

    def _check_dim(self, dim: int, where: str) -> None:
        if self._dim is None:
            self._dim = dim
        elif dim != self._dim:
            raise MedauditError(f"embedding cache {self.directory}: {where} has dimension {dim} but "
                                f"other shards have {self._dim}; delete the directory and rerun.")

    def __len__(self) -> int:
        return len(self._rows)

    def __contains__(self, digest: str) -> bool:
        return digest in self._rows

    def get(self, digests: Sequence[str]) -> NDArray[np.float32]:
        """Stack the cached embeddings of ``digests`` (all must be cached)."""
        missing = [d for d in digests if d not in self._rows]
        if missing:
            raise MedauditError(f"embedding cache: {len(missing)} digest(s) not cached, e.g. "
                                f"{missing[0]!r}; call missing() first.")
        return np.stack([self._rows[d] for d in digests]) if digests else np.empty((0, self._dim or 0),
                                                                                   np.float32)

    def missing(self, digests: Sequence[str]) -> list[str]:
        """The digests (first occurrence order, no repeats) that are not cached."""
        return list(dict.fromkeys(d for d in digests if d not in self._rows))

    # -- writing ---------------------------------------------------------------------------
    def put(self, digests: Sequence[str], embeddings: NDArray[np.floating]) -> Path | None:
        """Store one batch atomically as a new shard; returns its path (None if nothing new)."""
        emb = np.asarray(embeddings, dtype=np.float32)
        digests = [str(d) for d in digests]
        if emb.ndim != 2 or emb.shape[0] != len(digests):
            raise MedauditError(f"embedding cache: embeddings of shape {emb.shape} do not match "
                                f"{len(digests)} digests.")
        keep = [i for i, d in enumerate(digests) if d not in self._rows]
        keep = list({digests[i]: i for i in keep}.values())  # one row per new digest
        if not keep:
            return None
        self._check_dim(int(emb.shape[1]), "the new batch")
        new_d = np.array([digests[i] for i in keep])
        new_e = emb[keep]
        name = hashlib.sha256("\n".join(new_d.tolist()).encode("utf-8")).hexdigest()[:24]
        path = self.directory / f"shard-{name}.npz"
        buf = io.BytesIO()
        np.savez(buf, digests=new_d, embeddings=new_e)
        self._atomic_write_bytes(path, buf.getvalue(), suffix=".npz")
        for d, row in zip(new_d.tolist(), new_e, strict=True):
            self._rows[d] = row
        return path

    def _atomic_write_bytes(self, path: Path, data: bytes, *, suffix: str) -> None:
        # the temporary name carries this writer's pid and host: opening the cache removes
        # only files whose writer is dead (see _stale)
        atomic_write_bytes(path, data, prefix=f".tmp-{os.getpid()}-{_HOST}-", suffix=suffix,
                           durable=True)
