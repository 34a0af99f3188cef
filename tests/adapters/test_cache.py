"""The embedding cache: a run killed mid-way resumes without recomputing or losing anything.

Witness: the scores of an uninterrupted run without any cache; counts of images handed to
the image encoder (a wrapper); a child process really killed with SIGKILL half-way through
writing a shard (no Python clean-up runs); the files on disk.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pandas as pd
import pytest

from medaudit.adapters import EmbeddingCache, load_encoder, score_manifest
from medaudit.adapters.cache import _HOST
from medaudit.exceptions import MedauditError


class CountingEncoder:
    """Delegates to an encoder and counts the images it is handed."""

    def __init__(self, enc):
        self._enc, self.images = enc, []

    def __getattr__(self, name):
        return getattr(self._enc, name)

    def encode_images(self, images):
        self.images.append(len(images))
        return self._enc.encode_images(images)


# the child dies by SIGKILL inside the rename of its third shard: the shard's bytes are in a
# temporary file that never reached its name, exactly what a kill during a write leaves
_CHILD = textwrap.dedent("""
    import os, signal, sys
    import pandas as pd
    import torch
    torch.set_num_threads(1)
    from medaudit.adapters import load_encoder, score_manifest
    manifest = pd.read_csv(sys.argv[1], dtype={"image_id": str, "path": str, "cohort": str})
    enc = load_encoder("openclip", weights=sys.argv[2], device="cpu")
    real_replace, n = os.replace, [0]
    def replace(src, dst):
        if str(dst).endswith(".npz"):
            n[0] += 1
            if n[0] == 3:
                os.kill(os.getpid(), signal.SIGKILL)
        return real_replace(src, dst)
    os.replace = replace
    score_manifest(manifest, enc, batch_size=4, cache=sys.argv[3])
""")


def test_resume_after_sigkill_is_identical_and_recomputes_nothing(tmp_path, tiny_openclip_dir,
                                                                  real_manifest):
    manifest_path, manifest = real_manifest
    enc = load_encoder("openclip", weights=tiny_openclip_dir, device="cpu")
    reference = score_manifest(manifest, enc, batch_size=4)  # no cache at all
    cache_dir = tmp_path / "cache"
    proc = subprocess.Popen([sys.executable, "-c", _CHILD, str(manifest_path), str(tiny_openclip_dir),
                             str(cache_dir)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == -signal.SIGKILL, err[-2000:]
    ns = next(p for p in cache_dir.iterdir() if p.is_dir())
    assert len(list(ns.glob("shard-*.npz"))) == 2  # two batches reached the disk
    torn = list(ns.glob(".tmp-*"))  # the third: written, never renamed
    assert [p.name.startswith(f".tmp-{proc.pid}-{_HOST}-") for p in torn] == [True]

    second = CountingEncoder(enc)
    resumed = score_manifest(manifest, second, batch_size=4, cache=cache_dir)
    assert sum(second.images) == len(manifest) - 8  # only the images never cached
    assert (resumed.n_encoded, resumed.n_cached) == (len(manifest) - 8, 8)
    assert not list(ns.glob(".tmp-*"))  # the dead writer's debris is gone
    pd.testing.assert_frame_equal(resumed.scores, reference.scores, check_exact=True)

    third = CountingEncoder(enc)
    again = score_manifest(manifest, third, batch_size=4, cache=cache_dir)
    assert third.images == [] and again.n_cached == len(manifest)
    pd.testing.assert_frame_equal(again.scores, reference.scores, check_exact=True)


def test_a_live_writers_temporary_file_is_left_alone(tmp_path):
    a = EmbeddingCache(tmp_path, model="m", revision="r", processor="p")
    live = a.directory / f".tmp-{os.getpid()}-{_HOST}-abc.npz"  # this process: alive
    other_host = a.directory / f".tmp-1-{'0' * 8 if _HOST != '0' * 8 else '1' * 8}-abc.npz"
    old = a.directory / f".tmp-{os.getpid()}-{_HOST}-old.npz"
    for p in (live, other_host, old):
        p.write_bytes(b"in progress")
    two_days_ago = time.time() - 2 * 24 * 3600
    os.utime(old, (two_days_ago, two_days_ago))
    EmbeddingCache(tmp_path, model="m", revision="r", processor="p")
    # a live writer's file and another host's recent file stay; a two-day-old one is debris
    assert live.exists() and other_host.exists() and not old.exists()


def test_a_cache_of_another_model_is_refused(tmp_path, tiny_openclip_dir, real_manifest):
    _, manifest = real_manifest
    enc = load_encoder("openclip", weights=tiny_openclip_dir, device="cpu")
    wrong = EmbeddingCache(tmp_path, model="openclip", revision="something else",
                           processor=enc.processor_id)
    with pytest.raises(MedauditError, match="another model's embeddings"):
        score_manifest(manifest.iloc[:2], enc, cache=wrong)
    # a namespace directory whose record disagrees with its key is refused too
    (wrong.directory / "namespace.json").write_text('{"model": "x"}')
    with pytest.raises(MedauditError, match="namespace.json records"):
        EmbeddingCache(tmp_path, model="openclip", revision="something else",
                       processor=enc.processor_id)


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
