"""The embedding cache: a run killed mid-way resumes without recomputing or losing anything.

Witness: the scores of an uninterrupted run without any cache; counts of images handed to
the image encoder (a wrapper), and the files on disk.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from medaudit.adapters import EmbeddingCache, load_encoder, score_manifest


class Killed(Exception):
    """Stands in for a kill (SIGKILL, OOM, pre-emption) in the middle of a run."""


class FailingEncoder:
    """Delegates to an encoder; raises on image batch number ``fail_on`` (1-based), counts images."""

    def __init__(self, enc, fail_on=None):
        self._enc, self.fail_on, self.calls, self.images = enc, fail_on, 0, []

    def __getattr__(self, name):
        return getattr(self._enc, name)

    def encode_images(self, images):
        self.calls += 1
        if self.calls == self.fail_on:
            raise Killed(f"killed during batch {self.calls}")
        self.images.append(len(images))
        return self._enc.encode_images(images)


def test_resume_after_kill_is_identical_and_recomputes_nothing(tmp_path, tiny_openclip_dir, real_manifest):
    _, manifest = real_manifest
    enc = load_encoder("openclip", weights=tiny_openclip_dir, device="cpu")
    reference = score_manifest(manifest, enc, batch_size=4)  # no cache at all
    cache_dir = tmp_path / "cache"

    first = FailingEncoder(enc, fail_on=3)
    with pytest.raises(Killed):
        score_manifest(manifest, first, batch_size=4, cache=cache_dir)
    assert first.images == [4, 4]  # two batches finished before the kill
    ns = next(p for p in cache_dir.iterdir() if p.is_dir())
    assert len(list(ns.glob("shard-*.npz"))) == 2
    # a write torn by the kill leaves only a temporary file, which is ignored and removed
    (ns / ".tmp-torn.npz").write_bytes(b"half a shard")

    second = FailingEncoder(enc)
    resumed = score_manifest(manifest, second, batch_size=4, cache=cache_dir)
    assert sum(second.images) == len(manifest) - 8  # only the images never cached
    assert (resumed.n_encoded, resumed.n_cached) == (len(manifest) - 8, 8)
    assert not list(ns.glob(".tmp-*"))
    pd.testing.assert_frame_equal(resumed.scores, reference.scores, check_exact=True)

    third = FailingEncoder(enc)
    again = score_manifest(manifest, third, batch_size=4, cache=cache_dir)
    assert third.images == [] and again.n_cached == len(manifest)
    pd.testing.assert_frame_equal(again.scores, reference.scores, check_exact=True)


def test_cache_key_namespace_and_content(tmp_path):
    a = EmbeddingCache(tmp_path, model="m", revision="r1", processor="p")
    a.put(["d1", "d2"], np.array([[1.0, 2.0], [3.0, 4.0]]))
    a.put(["d2", "d3"], np.array([[9.0, 9.0], [5.0, 6.0]]))  # d2 already cached: kept, not replaced
    b = EmbeddingCache(tmp_path, model="m", revision="r1", processor="p")  # re-read from disk
    np.testing.assert_array_equal(b.get(["d3", "d1", "d2"]), [[5, 6], [1, 2], [3, 4]])
    assert b.missing(["d1", "d4", "d4"]) == ["d4"]
    # another revision or processor is another namespace: nothing is reused
    for kw in ({"revision": "r2", "processor": "p"}, {"revision": "r1", "processor": "q"}):
        assert len(EmbeddingCache(tmp_path, model="m", **kw)) == 0
    with pytest.raises(Exception, match="dimension 3"):
        b.put(["d9"], np.ones((1, 3)))


def test_unreadable_shard_is_reported_and_recomputed(tmp_path):
    a = EmbeddingCache(tmp_path, model="m", revision="r", processor="p")
    path = a.put(["d1"], np.ones((1, 2)))
    path.write_bytes(b"garbage")
    with pytest.warns(UserWarning, match="cannot be read"):
        b = EmbeddingCache(tmp_path, model="m", revision="r", processor="p")
    assert b.missing(["d1"]) == ["d1"]
