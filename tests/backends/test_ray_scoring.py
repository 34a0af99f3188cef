"""Scoring with the image encoding sharded over Ray Data workers and a shared embedding cache.

Witness: the local ``score_manifest`` (no cache) on the same manifest and encoder; the
Ray path must give the identical score table and failure list, and a rerun must encode
exactly the shards missing from the cache.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from medaudit.exceptions import MedauditError

pytest.importorskip("ray", reason="the optional extra medaudit[ray] is not installed")
Image = pytest.importorskip("PIL.Image")

from medaudit.adapters import PromptFamily, score_manifest  # noqa: E402
from medaudit.backends.ray_scoring import plan_shards, score_manifest_on_ray  # noqa: E402

FAMILIES = (PromptFamily(name="clinical", positive=("tuberculosis",), negative=("normal chest",)),
            PromptFamily(name="photo", positive=("a photo of TB",), negative=("a photo of lungs",)))
BATCH = 3


class FakeEncoder:
    """A deterministic stand-in for an image-text model (pixel statistics; hashed texts)."""

    entry = SimpleNamespace(name="fake", exposure={})
    revision = "r1"
    processor_id = "rgb-stats"
    checkpoint = "fake (test)"
    kind = "hf"
    learned_scale = 10.0

    def encode_images(self, images):
        x = np.stack([np.asarray(im, dtype=np.float32) / 255.0 for im in images])
        return np.concatenate([x.mean(axis=(1, 2)), x.std(axis=(1, 2)), x[:, :2, :2, 0].reshape(
            len(images), -1)], axis=1).astype(np.float32)

    def encode_texts(self, texts):
        seeds = [int.from_bytes(hashlib.sha256(t.encode()).digest()[:4], "little") for t in texts]
        return np.stack([np.random.default_rng(s).standard_normal(10) for s in seeds]).astype(
            np.float32)


@pytest.fixture
def manifest(tmp_path) -> tuple[pd.DataFrame, Path]:
    rng = np.random.default_rng(7)
    rows = []
    for i in range(10):
        Image.fromarray(rng.integers(0, 256, (8, 8, 3), dtype=np.uint8)).save(tmp_path / f"{i}.png")
        rows.append((f"img{i}", f"{i}.png", "c1" if i < 6 else "c2", i % 2))
    (tmp_path / "dup.png").write_bytes((tmp_path / "0.png").read_bytes())  # same bytes as img0
    (tmp_path / "bad.png").write_bytes(b"not an image")
    rows += [("dup", "dup.png", "c2", 0), ("bad", "bad.png", "c2", 1), ("gone", "gone.png", "c2", 0)]
    return pd.DataFrame(rows, columns=["image_id", "path", "cohort", "label"]), tmp_path


def test_plan_shards_matches_the_local_batches(manifest):
    m, base = manifest
    shards, n_cached = plan_shards(m, base_dir=base, batch_size=BATCH)
    # 11 distinct readable files (img0..9, bad; dup repeats img0, gone is missing) -> 4 shards
    assert [len(d) for d, _ in shards] == [3, 3, 3, 2] and n_cached == 0
    assert shards[0][1][0] == str(base / "0.png")  # a repeated image is read from its first row
    shards, n_cached = plan_shards(m, base_dir=base, batch_size=BATCH, cached=lambda d: True)
    assert shards == [] and n_cached == 11


# Ray Data's own configuration warns about its deprecated options on first use
@pytest.mark.slow
@pytest.mark.filterwarnings("ignore::DeprecationWarning:ray.data")
def test_ray_scoring_equals_local_and_reruns_skip_finished_shards(ray_session, manifest, tmp_path):
    m, base = manifest
    local = score_manifest(m, FakeEncoder(), base_dir=base, families=FAMILIES, batch_size=BATCH)
    cache = tmp_path / "cache"
    first = score_manifest_on_ray(m, FakeEncoder, cache=cache, base_dir=base, families=FAMILIES,
                                  batch_size=BATCH, num_workers=2)
    pd.testing.assert_frame_equal(first.scores, local.scores)
    # byte-identical failure tables: no memory address from Pillow's message survives
    pd.testing.assert_frame_equal(first.failures, local.failures)
    assert not first.failures["error"].str.contains("0x").any()
    assert set(first.failures["image_id"]) == {"bad", "gone"}
    assert (first.n_encoded, first.n_cached) == (10, 0)
    shard_files = sorted(cache.rglob("shard-*.npz"))
    assert len(shard_files) == 4  # one per planned shard; 'bad' leaves its shard one image short

    # a killed run leaves some shards: remove one and rerun -> only its images are encoded
    with np.load(shard_files[0]) as z:
        lost = len(z["digests"])
    shard_files[0].unlink()
    again = score_manifest_on_ray(m, FakeEncoder, cache=cache, base_dir=base, families=FAMILIES,
                                  batch_size=BATCH, num_workers=1)
    assert (again.n_encoded, again.n_cached) == (lost, 11 - lost - 1)  # 'bad' is never cached
    pd.testing.assert_frame_equal(again.scores, local.scores)


@pytest.mark.filterwarnings("ignore::DeprecationWarning:ray.data")
def test_a_file_changed_after_planning_never_enters_the_cache(ray_session, manifest, tmp_path,
                                                             monkeypatch):
    import medaudit.backends.ray_scoring as rs

    m, base = manifest
    old = hashlib.sha256((base / "3.png").read_bytes()).hexdigest()
    real = rs.plan_shards

    def plan_then_change(*args, **kwargs):
        out = real(*args, **kwargs)
        # img3 is rewritten between the driver's hashing and the workers' encoding
        Image.fromarray(np.full((8, 8, 3), 200, dtype=np.uint8)).save(base / "3.png")
        return out

    monkeypatch.setattr(rs, "plan_shards", plan_then_change)
    cache = tmp_path / "cache"
    res = score_manifest_on_ray(m, FakeEncoder, cache=cache, base_dir=base, families=FAMILIES,
                                batch_size=BATCH, num_workers=1)
    cached = set()
    for f in cache.rglob("shard-*.npz"):
        with np.load(f) as z:
            cached |= {str(d) for d in z["digests"]}
    # the old digest would now key the new picture's embedding: a later run on the old bytes
    # would reuse it silently
    assert old not in cached
    assert hashlib.sha256((base / "3.png").read_bytes()).hexdigest() in cached  # scored as it is now
    assert "img3" in set(res.scores["image_id"])


def test_bad_options_name_the_parameter(manifest, tmp_path):
    m, base = manifest
    for kw, name in (({"batch_size": 0}, "batch_size"), ({"num_workers": 0}, "num_workers"),
                     ({"num_gpus": -1}, "num_gpus")):
        with pytest.raises(MedauditError, match=name):
            score_manifest_on_ray(m, FakeEncoder, cache=tmp_path / "c", base_dir=base, **kw)


def test_worker_refuses_an_encoder_other_than_the_planned_one(tmp_path):
    """A worker's factory that builds another model must not write under the driver's key."""
    from medaudit.backends.ray_scoring import _EncodeShards
    from medaudit.exceptions import MedauditError

    enc = FakeEncoder()
    planned = {"model": enc.entry.name, "revision": enc.revision, "processor": enc.processor_id}
    _EncodeShards(FakeEncoder, [], str(tmp_path / "c"), planned)  # the same model: accepted
    other = {**planned, "revision": "sha256:another"}
    with pytest.raises(MedauditError, match="encoder factory must build the model"):
        _EncodeShards(FakeEncoder, [], str(tmp_path / "c"), other)
