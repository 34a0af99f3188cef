"""Overlap screen: vectorised Hamming search against brute force, pHash against the M0.13 recipe,
planted duplicates among real shared images, conservative exclusion that keeps split roles."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from medaudit.datasets import manifests as mf
from medaudit.exceptions import MedauditError, SchemaError
from medaudit.imaging import overlap as ov

SHARED = Path(__file__).resolve().parents[2] / ".." / "shared" / "data"


def _brute(hashes: list[int], groups: list[int] | None, k: int) -> set[tuple[int, int, int]]:
    out = set()
    for i in range(len(hashes)):
        for j in range(i + 1, len(hashes)):
            d = bin(hashes[i] ^ hashes[j]).count("1")
            if d <= k and (groups is None or groups[i] != groups[j]):
                out.add((i, j, d))
    return out


@given(st.lists(st.integers(0, 2**64 - 1), min_size=0, max_size=40), st.integers(0, 64),
       st.integers(1, 50), st.booleans(), st.data())
def test_hamming_pairs_equal_brute_force(values, k, block, grouped, data):
    # near-duplicates are rare among random hashes: flip a few bits of earlier ones
    values = values + [v ^ (1 << data.draw(st.integers(0, 63))) for v in values[:5]]
    groups = [data.draw(st.integers(0, 2)) for _ in values] if grouped else None
    i, j, d = ov.hamming_pairs(np.array(values, dtype=np.uint64), groups, max_distance=k, block_size=block)
    got = set(zip(i.tolist(), j.tolist(), d.tolist(), strict=True))
    assert got == _brute(values, groups, k)
    assert list(zip(i.tolist(), j.tolist(), strict=True)) == sorted(zip(i.tolist(), j.tolist(), strict=True))


def test_hamming_pairs_rejects_bad_input():
    with pytest.raises(MedauditError, match="uint64"):
        ov.hamming_pairs(np.array([1, 2]))
    with pytest.raises(MedauditError, match="max_distance"):
        ov.hamming_pairs(np.array([1], dtype=np.uint64), max_distance=65)
    with pytest.raises(MedauditError, match="16 hexadecimal"):
        ov.pack_hex(["abcd"])


def test_pack_hex_matches_python_int():
    hexes = ["0000000000000000", "ffffffffffffffff", "8000000000000001", "0123456789abcdef"]
    assert ov.pack_hex(hexes).tolist() == [int(h, 16) for h in hexes]


def test_12200_hashes_all_pairs_find_planted_neighbours():
    # paper 000's 12,200 images; the benchmark target is <= 1 s (timed in the report, not here)
    rng = np.random.default_rng(7)
    h = rng.integers(0, 2**63, size=12_200, dtype=np.uint64) * np.uint64(2) + np.uint64(1)
    h[100] = h[9000] ^ np.uint64(0b1011)   # distance 3
    h[5] = h[12_199] ^ np.uint64(1 << 63)  # distance 1
    groups = np.repeat(np.arange(5), 12_200 // 5 + 1)[:12_200]
    i, j, d = ov.hamming_pairs(h, groups)
    assert set(zip(i.tolist(), j.tolist(), d.tolist(), strict=True)) == {(100, 9000, 3), (5, 12_199, 1)}


# ------------------------------------------------------------------------------ real images
def _need(path: Path) -> Path:
    if not path.exists():
        pytest.skip(f"shared data {path} is absent")
    return path


@pytest.fixture(scope="module")
def screened(tmp_path_factory):
    """60 images from each of three real datasets plus planted copies of three TBX11K images."""
    from PIL import Image

    tbx = mf.tbx11k_tb_subset_manifest(_need(SHARED / "tbx11k_tb_positive_subset")).table
    ker = mf.kermany_manifest(_need(SHARED / "kermany_pediatric_pneumonia_test224")).table
    nih = mf.nih810_manifest(_need(SHARED / "nih_cxr14_google_expert_readers")).table
    parts = [t.iloc[::max(1, len(t) // 60)].head(60) for t in (tbx, ker, nih)]
    base = pd.concat(parts, ignore_index=True)
    d = tmp_path_factory.mktemp("planted")
    src = [Path(p) for p in parts[0]["path"].iloc[:3]]
    shutil.copy(src[0], d / "exact.png")                                     # identical bytes
    img1 = Image.open(src[1]).convert("L")
    img1.save(d / "reencoded.jpg", quality=85)                               # lossy re-encoding
    img1.resize((200, 200), Image.Resampling.BILINEAR).save(d / "resized.png")  # resized
    img2 = Image.open(src[2]).convert("L")
    w, h = img2.size
    img2.crop((3, 3, w - 3, h - 3)).save(d / "cropped.png")                  # slightly cropped
    planted = pd.DataFrame({"image_id": ["exact", "reencoded", "resized", "cropped"], "dataset": "planted",
                            "path": [str(d / n) for n in ("exact.png", "reencoded.jpg", "resized.png",
                                                           "cropped.png")], "split": "test"})
    manifest = pd.concat([base, planted], ignore_index=True)
    return manifest, ov.screen_overlap(manifest), [p.stem for p in src]


def test_planted_duplicates_are_found(screened):
    manifest, res, (t0, t1, t2) = screened
    pairs = res.pairs
    planted = pairs[(pairs["dataset_a"] == "planted") | (pairs["dataset_b"] == "planted")]
    found = {(r.image_a, r.image_b) for r in planted.itertuples()}
    for pair in (("cropped", t2), ("exact", t0), ("reencoded", t1), ("resized", t1)):
        assert pair in found, pair
    exact = planted[(planted["image_a"] == "exact") & (planted["image_b"] == t0)].iloc[0]
    assert bool(exact["sha256_match"]) and exact["hamming"] == 0
    assert planted["sha256_match"].sum() == 1
    assert res.versions["imagehash"] and res.versions["pillow"]


def test_screen_equals_brute_force_with_imagehash_subtraction(screened):
    import imagehash
    from PIL import Image

    manifest, res, _ = screened
    rows = manifest.sort_values(["dataset", "image_id"]).reset_index(drop=True)
    hashes = [imagehash.phash(Image.open(p)) for p in rows["path"]]
    expected = set()
    for a in range(len(rows)):
        for b in range(a + 1, len(rows)):
            if rows["dataset"][a] != rows["dataset"][b] and hashes[a] - hashes[b] <= 4:
                expected.add((rows["dataset"][a], rows["image_id"][a], rows["dataset"][b],
                              rows["image_id"][b], int(hashes[a] - hashes[b])))
    got = {(r.dataset_a, r.image_a, r.dataset_b, r.image_b, int(r.hamming)) for r in res.pairs.itertuples()}
    assert got == expected


def test_phash_is_the_m013_recipe(screened):
    from PIL import Image
    from scipy.fft import dct

    manifest, res, _ = screened
    for row in res.hashes.head(12).itertuples():
        img = Image.open(row.path).convert("L").resize((32, 32), Image.Resampling.LANCZOS)
        coef = dct(dct(np.asarray(img, dtype=float), type=2, axis=0), type=2, axis=1)[:8, :8]
        bits = (coef > np.median(coef)).ravel()
        assert int("".join("1" if b else "0" for b in bits), 2) == int(row.phash, 16)


def test_exclusion_is_conservative_and_keeps_split_roles(screened):
    manifest, res, _ = screened
    ex = res.excluded
    assert list(ex.columns) == ["dataset", "image_id", "path", "reason"]
    in_pairs = set(zip(res.pairs["dataset_a"], res.pairs["image_a"], strict=True)) | set(
        zip(res.pairs["dataset_b"], res.pairs["image_b"], strict=True))
    assert set(zip(ex["dataset"], ex["image_id"], strict=True)) == in_pairs
    retained, counts = ov.apply_exclusion(manifest, ex)
    assert len(retained) == len(manifest) - len(ex)
    merged = retained.merge(manifest, on=["dataset", "image_id"], suffixes=("", "_orig"))
    assert (merged["split"].astype(str) == merged["split_orig"].astype(str)).all()
    assert counts["n_excluded"].sum() == len(ex)
    assert (counts["n_before"] - counts["n_excluded"] == counts["n_retained"]).all()


def test_write_overlap_is_deterministic(screened, tmp_path):
    manifest, res, _ = screened
    ov.write_overlap(res, tmp_path / "a")
    ov.write_overlap(ov.screen_overlap(manifest, hashes=res.hashes), tmp_path / "b")
    for name in ("hashes.csv", "pairs.csv", "exclusion.csv", "overlap.json"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()
    back = pd.read_csv(tmp_path / "a" / "exclusion.csv")
    assert list(back.columns) == ["dataset", "image_id", "path", "reason"]


def test_hashes_read_back_from_csv_give_the_same_screen(tmp_path):
    (tmp_path / "a.png").write_bytes(b"not a png")
    (tmp_path / "b.png").write_bytes(b"not a png")
    man = pd.DataFrame({"dataset": ["a", "b"], "image_id": ["x", "y"],
                        "path": [str(tmp_path / "a.png"), str(tmp_path / "b.png")]})
    res = ov.screen_overlap(man)
    res.hashes.to_csv(tmp_path / "h.csv", index=False)
    back = pd.read_csv(tmp_path / "h.csv")  # empty phash cells come back as NaN
    assert back["phash"].isna().all()
    again = ov.screen_overlap(man, hashes=back)
    pd.testing.assert_frame_equal(again.pairs, res.pairs)
    assert again.to_dict()["unhashed"] == res.to_dict()["unhashed"]
    with pytest.raises(SchemaError, match="other images than the manifest"):
        ov.screen_overlap(man.iloc[:1], hashes=back)


def test_unreadable_images_are_reported_not_dropped(tmp_path):
    (tmp_path / "bad.png").write_bytes(b"not a png")
    (tmp_path / "bad2.png").write_bytes(b"not a png")
    man = pd.DataFrame({"dataset": ["a", "b", "c"], "image_id": ["x", "y", "z"],
                        "path": [str(tmp_path / "bad.png"), str(tmp_path / "bad2.png"),
                                 str(tmp_path / "missing.png")]})
    res = ov.screen_overlap(man)
    assert res.hashes["error"].tolist()[2] == "file not found"
    assert "could not read image" in res.hashes["error"].tolist()[0]
    # identical bytes are still an exact-duplicate pair even though they cannot be decoded
    assert len(res.pairs) == 1 and bool(res.pairs["sha256_match"].iloc[0])
    assert pd.isna(res.pairs["hamming"][0])
    assert len(res.to_dict()["unhashed"]) == 3


def test_bad_manifests_and_pairs_raise():
    with pytest.raises(SchemaError, match="lacks column"):
        ov.screen_overlap(pd.DataFrame({"dataset": ["a"], "image_id": ["x"]}))
    dup = pd.DataFrame({"dataset": ["a", "a"], "image_id": ["x", "x"], "path": ["p", "q"]})
    with pytest.raises(SchemaError, match="unique"):
        ov.hash_images(dup)
    man = pd.DataFrame({"dataset": ["a"], "image_id": ["x"], "path": ["p"]})
    pairs = pd.DataFrame({"dataset_a": ["a"], "image_a": ["x"], "dataset_b": ["b"], "image_b": ["q"],
                          "sha256_match": [False], "hamming": [2]})
    with pytest.raises(SchemaError, match="not in the manifest"):
        ov.exclusion(man, pairs)


def test_a_16_bit_copy_hashes_as_its_8_bit_original(tmp_path):
    """Probe finding: imagehash's convert("L") clips 16-bit images at 255, so a 16-bit PNG
    (PadChest ships them) saturated: its 8-bit original was 22-34 bits away and unrelated
    16-bit images shared one hash.  Witness: imagehash itself on the 8-bit original, and
    the brute-force Hamming distance."""
    import imagehash
    from PIL import Image

    src = sorted((_need(SHARED / "kermany_pediatric_pneumonia_test224") / "PNEUMONIA").glob("*.jpeg"))[:8]
    rows, originals = [], []
    for k, p in enumerate(src):
        with Image.open(p) as img:
            g = np.asarray(img.convert("L"))
        originals.append(int(str(imagehash.phash(Image.fromarray(g), **ov.PHASH_PARAMS)), 16))
        Image.fromarray(g).save(tmp_path / f"o{k}.png")
        wide = g.astype(np.uint16) * 257  # the same picture at 16 bits
        Image.fromarray(wide).save(tmp_path / f"w{k}.png")
        with Image.open(tmp_path / f"w{k}.png") as back:
            assert back.mode.startswith("I")  # a 16-bit PNG indeed
        rows += [{"dataset": "eight", "image_id": f"o{k}", "path": str(tmp_path / f"o{k}.png")},
                 {"dataset": "sixteen", "image_id": f"w{k}", "path": str(tmp_path / f"w{k}.png")}]
    h = ov.hash_images(pd.DataFrame(rows)).set_index("image_id")
    assert (h["error"] == "").all()
    for k in range(len(src)):
        assert int(h.loc[f"o{k}", "phash"], 16) == originals[k]  # 8-bit images: unchanged
        assert bin(int(h.loc[f"o{k}", "phash"], 16) ^ int(h.loc[f"w{k}", "phash"], 16)).count("1") <= 4
    # and unrelated 16-bit images no longer share a saturated hash
    assert h.loc[[f"w{k}" for k in range(len(src))], "phash"].nunique() == len(src)
