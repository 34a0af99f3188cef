"""Zero-shot scoring with the image encoding sharded over Ray workers (Ray Data batch inference).

The expensive step of :func:`medaudit.adapters.score_manifest` is encoding images.  Here
the driver hashes every image, lists the images the shared
:class:`~medaudit.adapters.EmbeddingCache` lacks and cuts them into the same shards the
local path would encode (``batch_size`` images in first-occurrence order); Ray Data
``map_batches`` runs one encoder per worker (``num_gpus`` each when asked) and every
finished shard is written atomically into the shared cache.  The driver then calls
``score_manifest`` itself, which finds every embedding cached: prompts, scores, failures
and the ModelCard come from the one local code path.

A worker that dies loses only its unfinished shard (Ray retries it); a run that is
killed leaves complete shards behind, and a rerun encodes only the missing ones.
``ray`` is imported only when this runs (optional extra ``medaudit[ray]``).
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from medaudit.exceptions import MedauditError

__all__ = ["score_manifest_on_ray", "plan_shards"]


def plan_shards(manifest: pd.DataFrame, *, base_dir: str | os.PathLike[str] = ".",
                cached: Callable[[str], bool] = lambda d: False, batch_size: int = 32
                ) -> tuple[list[tuple[list[str], list[str]]], int]:
    """The shards the local path would encode: ``[(digests, paths), ...]`` and the number cached.

    Unreadable files are skipped here (``score_manifest`` reports them); an image whose
    bytes repeat is encoded once, from its first row.
    """
    from medaudit.adapters.cache import bytes_sha256

    base = Path(base_dir)
    first: dict[str, str] = {}
    for p in manifest["path"]:
        path = Path(p) if Path(p).is_absolute() else base / p
        try:
            d = bytes_sha256(path.read_bytes())
        except OSError:
            continue
        first.setdefault(d, str(path))
    todo = [d for d in first if not cached(d)]
    k = int(batch_size)
    shards = [(todo[i:i + k], [first[d] for d in todo[i:i + k]]) for i in range(0, len(todo), k)]
    return shards, len(first) - len(todo)


class _EncodeShards:
    """A Ray Data worker: one encoder, one view of the shared cache; encodes whole shards."""

    def __init__(self, encoder_factory: Callable[[], Any], shards: list, cache_root: str,
                 namespace: dict[str, str]):
        from medaudit.adapters.cache import EmbeddingCache
        from medaudit.exceptions import MedauditError

        self.encoder = encoder_factory()
        # a worker whose factory builds another model (other weights, other processor) must not
        # write its embeddings under the driver's cache key
        mine = {"model": self.encoder.entry.name, "revision": self.encoder.revision,
                "processor": self.encoder.processor_id}
        if mine != dict(namespace):
            raise MedauditError(f"a Ray worker's encoder is {mine} but the run's embedding cache "
                                f"is keyed {dict(namespace)}; the encoder factory must build the "
                                "model the driver planned with.")
        self.cache = EmbeddingCache(cache_root, **namespace)
        self.shards = shards

    def __call__(self, batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        import io

        from medaudit.adapters.cache import bytes_sha256
        from medaudit.adapters.zeroshot import open_rgb

        done = []
        for i in batch["shard"]:
            digests, paths = self.shards[int(i)]
            chunk, images = [], []
            for d, p in zip(digests, paths, strict=True):
                try:
                    data = Path(p).read_bytes()
                    # decode the very bytes the driver hashed: a file changed since planning must
                    # not put its new embedding into the shared cache under the old digest
                    if bytes_sha256(data) != d:
                        continue  # score_manifest sees the change and reports it
                    images.append(open_rgb(io.BytesIO(data)))
                    chunk.append(d)
                except Exception:  # noqa: BLE001 - the driver's score_manifest reports it
                    continue
            if images:
                emb = np.asarray(self.encoder.encode_images(images), dtype=np.float32)
                if emb.shape[0] != len(images):
                    raise MedauditError(f"image encoder returned {emb.shape[0]} rows for "
                                        f"{len(images)} images (shard {int(i)}).")
                self.cache.put(chunk, emb)  # atomic: a finished shard survives a later kill
            done.append(len(images))
        return {"shard": np.asarray(batch["shard"]), "n_encoded": np.asarray(done, dtype=np.int64)}


def score_manifest_on_ray(manifest: pd.DataFrame, encoder_factory: Callable[[], Any], *,
                          cache: str | os.PathLike[str], base_dir: str | os.PathLike[str] = ".",
                          families: Iterable[Any] | None = None, batch_size: int = 32,
                          num_workers: int | None = None, num_gpus: float = 0.0,
                          model_name: str | None = None, address: str | None = None) -> Any:
    """``score_manifest`` with the image encoding sharded over Ray workers.

    Parameters
    ----------
    manifest : DataFrame
        ``image_id, path, cohort, label`` (+ optional columns), as for ``score_manifest``.
    encoder_factory : callable
        A picklable function of no arguments that builds the encoder (e.g.
        ``functools.partial(load_encoder, "biomedclip", weights=...)``); called once in the
        driver (text prompts, scale, provenance) and once per worker.
    cache : path
        The embedding cache root, on storage every worker can write (shared file system).
    base_dir : path, default="."
        Relative image paths are resolved against it (must be valid on the workers).
    families : iterable of PromptFamily, optional
        Default: the five of paper 000 Table 3.
    batch_size : int, default=32
        Images per shard and forward pass (the same shards as the local path).
    num_workers : int, optional
        Encoders running at once (default: one per shard up to what the cluster schedules).
    num_gpus : float, default=0.0
        GPUs per encoder (0: CPU).
    model_name, address : str, optional
        The ``model`` column; the Ray address (None: this process's connection or a new
        local instance).

    Returns
    -------
    medaudit.adapters.ScoringResult
        As ``score_manifest`` with the same cache; ``n_encoded`` counts the images encoded
        on the workers in this run, ``n_cached`` those found in the cache beforehand.
    """
    from medaudit.adapters.cache import EmbeddingCache
    from medaudit.adapters.zeroshot import check_manifest, score_manifest
    from medaudit.backends.ray_backend import connect

    if int(batch_size) < 1:
        raise MedauditError(f"batch_size must be a positive integer; got {batch_size!r}.")
    if num_workers is not None and int(num_workers) < 1:
        raise MedauditError(f"num_workers must be a positive integer or None; got {num_workers!r}.")
    if float(num_gpus) < 0:
        raise MedauditError(f"num_gpus must be >= 0; got {num_gpus!r}.")
    m = check_manifest(manifest, source="manifest")
    encoder = encoder_factory()
    namespace = {"model": encoder.entry.name, "revision": encoder.revision,
                 "processor": encoder.processor_id}
    store = EmbeddingCache(cache, **namespace)
    shards, n_cached = plan_shards(m, base_dir=base_dir, cached=store.__contains__,
                                   batch_size=batch_size)
    n_encoded = 0
    if shards:
        ray, owned = connect(address, num_workers)
        try:
            n_encoded = _encode(ray, shards, encoder_factory, str(cache), namespace,
                                num_workers=num_workers, num_gpus=float(num_gpus))
        finally:
            if owned:
                ray.shutdown()
        store = EmbeddingCache(cache, **namespace)  # re-read: the workers' shards are on disk
    kwargs = {} if families is None else {"families": families}
    res = score_manifest(m, encoder, base_dir=base_dir, batch_size=batch_size, cache=store,
                         model_name=model_name, **kwargs)
    # images the workers could not decode are retried (and reported) by score_manifest
    return dataclasses.replace(res, n_encoded=res.n_encoded + n_encoded, n_cached=n_cached)


def _encode(ray: Any, shards: list, encoder_factory: Callable[[], Any], cache_root: str,
            namespace: dict[str, str], *, num_workers: int | None, num_gpus: float) -> int:
    """Run the shards through Ray Data ``map_batches`` (one shard per batch); images encoded."""
    n_actors = min(len(shards), int(num_workers) if num_workers else len(shards))
    ds = ray.data.from_items([{"shard": i} for i in range(len(shards))],
                             override_num_blocks=len(shards))
    resources = {"num_gpus": num_gpus} if num_gpus > 0 else {}
    out = ds.map_batches(_EncodeShards, batch_size=1, batch_format="numpy",
                         fn_constructor_kwargs={"encoder_factory": encoder_factory,
                                                "shards": shards, "cache_root": cache_root,
                                                "namespace": namespace},
                         concurrency=(1, n_actors), **resources).take_all()
    got = sorted(int(r["shard"]) for r in out)
    if got != list(range(len(shards))):
        raise MedauditError(f"Ray Data returned shards {got[:10]} for {len(shards)} shard(s); "
                            "rerun (finished shards are cached).")
    return int(sum(int(r["n_encoded"]) for r in out))
