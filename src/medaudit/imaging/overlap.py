"""Overlap-candidate screen across datasets and conservative exclusion (methods.md M0.13).

Two screens over a manifest (``dataset, image_id, path`` at least):

* exact duplicates — SHA-256 of the file bytes;
* near duplicates — the 64-bit DCT perceptual hash of :func:`imagehash.phash`
  (``hash_size=8, highfreq_factor=4``: grayscale, 32×32 LANCZOS, 2-D DCT-II, top-left 8×8 block,
  bit = coefficient > median), every pair from *different* groups (default: datasets) with Hamming
  distance ≤ 4.  An image of more than 8 bits (a 16-bit PNG) is first stretched linearly over its
  own range to 8 bits: imagehash's ``convert("L")`` would clip it at 255 and saturate it.

All pairs are compared by a vectorised bit count over packed ``uint64`` hashes (XOR then
``np.bitwise_count``) in row blocks that bound memory; nothing loops over pairs in Python.

Exclusion is conservative and unadjudicated: every image in any candidate pair is removed.  The
images that remain keep their original split role (nothing is re-split or re-labelled).  pHash
values move with Pillow's resampling code (imagehash#32), so the Pillow and imagehash versions are
recorded with every result.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray

from medaudit.exceptions import MedauditError, SchemaError
from medaudit.io.schema import text_columns

__all__ = [
    "OverlapResult",
    "hash_images",
    "pack_hex",
    "hamming_pairs",
    "screen_overlap",
    "exclusion",
    "apply_exclusion",
    "write_overlap",
    "PAIR_COLUMNS",
    "EXCLUSION_COLUMNS",
]

PAIR_COLUMNS = ("dataset_a", "image_a", "dataset_b", "image_b", "sha256_match", "hamming")
EXCLUSION_COLUMNS = ("dataset", "image_id", "path", "reason")
#: the screen's hash: paper 000 names imagehash.phash with these parameters
PHASH_PARAMS = {"hash_size": 8, "highfreq_factor": 4}


@dataclass(frozen=True)
class OverlapResult:
    """The screen's tables and the settings and library versions that produced them."""

    hashes: pd.DataFrame
    pairs: pd.DataFrame
    excluded: pd.DataFrame
    params: dict[str, Any] = field(default_factory=dict)
    versions: dict[str, str] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        unhashed = self.hashes[self.hashes["error"] != ""]
        return {"params": self.params, "versions": self.versions,
                "n_images": len(self.hashes), "n_pairs": len(self.pairs),
                "n_sha256_pairs": int(self.pairs["sha256_match"].sum()) if len(self.pairs) else 0,
                "n_excluded": len(self.excluded),
                "excluded_by_dataset": self.excluded.groupby("dataset").size().to_dict()
                if len(self.excluded) else {},
                "unhashed": unhashed[["dataset", "image_id", "path", "error"]].to_dict("records")}

    def unhashed_message(self, *, limit: int = 3) -> str | None:
        """One line naming the images that could not be hashed (``None`` when every one was).

        Names the first ``limit`` images (dataset, image id, path and why), then how many more;
        the full list is in ``overlap.json`` under ``unhashed``.

        Examples
        --------
        >>> h = pd.DataFrame({"dataset": ["a", "a"], "image_id": ["x1", "x2"],
        ...                   "path": ["/d/x1.png", "/d/x2.png"], "error": ["", "file not found"]})
        >>> r = OverlapResult(hashes=h, pairs=pd.DataFrame(), excluded=pd.DataFrame())
        >>> r.unhashed_message()
        "1 image(s) could not be hashed: a/x2 ('/d/x2.png': file not found)"
        """
        from medaudit.io.messages import quote, shorten

        bad = self.hashes[self.hashes["error"] != ""]
        if bad.empty:
            return None
        shown = "; ".join(f"{r.dataset}/{r.image_id} ({quote(str(r.path))}: {shorten(r.error, limit=160)})"
                          for r in bad.head(limit).itertuples(index=False))
        more = f"; and {len(bad) - limit} more (all listed in overlap.json)" if len(bad) > limit else ""
        return f"{len(bad)} image(s) could not be hashed: {shown}{more}"


def versions() -> dict[str, str]:
    """Versions that determine the hashes (Pillow's resize changes pHash values)."""
    import imagehash
    import PIL

    return {"pillow": PIL.__version__, "imagehash": getattr(imagehash, "__version__", "unknown"),
            "numpy": np.__version__}


def _check_manifest(manifest: pd.DataFrame, *, name: str = "manifest") -> pd.DataFrame:
    missing = [c for c in ("dataset", "image_id", "path") if c not in manifest.columns]
    if missing:
        raise SchemaError(f"{name} lacks column(s) {missing}; it needs dataset, image_id and path "
                          f"(columns are {list(manifest.columns)}).")
    # an empty dataset would be a group of its own, an empty path the working folder
    text_columns(manifest, ("dataset", "image_id", "path"), source=name,
                 hint="every image needs its dataset, id and path")
    dup = manifest.duplicated(["dataset", "image_id"], keep=False)
    if dup.any():
        shown = manifest.loc[dup, ["dataset", "image_id"]].astype(str).agg("/".join, axis=1)
        raise SchemaError(f"{name}: (dataset, image_id) must be unique; repeated: "
                          f"{', '.join(sorted(set(shown))[:5])}.")
    return manifest


def pack_hex(hexes: Sequence[str]) -> NDArray[np.uint64]:
    """16-digit hexadecimal hashes (``str(imagehash)``) → ``uint64`` (first bit = most significant)."""
    try:
        raw = b"".join(bytes.fromhex(h) for h in hexes)
    except ValueError as exc:
        raise MedauditError(f"hashes must be hexadecimal strings: {exc}") from None
    if len(raw) != 8 * len(hexes):
        raise MedauditError("every hash must have exactly 16 hexadecimal digits (64 bits).")
    return np.frombuffer(raw, dtype=">u8").astype(np.uint64)


def _gray8(img: Any) -> Any:
    """``img`` as imagehash should see it: 8-bit and wider images alike.

    imagehash converts with ``convert("L")``, which clips a 16-bit image at 255: a 16-bit
    X-ray saturates to almost all white, so a 16-bit copy of an 8-bit image lands far from
    it and unrelated 16-bit images share one hash.  Wider images are stretched linearly over
    their own range to 0..255 first (:func:`medaudit.imaging.pixels.to_8bit`; a linear map
    keeps the DCT's order of coefficients, so a copy at another bit depth hashes alike);
    8-bit images are passed on unchanged.
    """
    from medaudit.imaging.pixels import to_8bit

    return to_8bit(img, stretch=True)


def hash_images(manifest: pd.DataFrame) -> pd.DataFrame:
    """SHA-256 of the bytes and the 64-bit pHash of each image of a manifest.

    Parameters
    ----------
    manifest : DataFrame
        Needs ``dataset, image_id, path``; other columns are carried along.

    Returns
    -------
    DataFrame
        The manifest's rows sorted by ``(dataset, image_id)`` plus ``sha256``, ``phash`` (16 hex
        digits) and ``error`` ('' when both hashes were computed; otherwise why not — an image
        that cannot be read is reported, never dropped).
    """
    import imagehash
    from PIL import Image

    table = _check_manifest(manifest).sort_values(["dataset", "image_id"], kind="stable")
    table = table.reset_index(drop=True).copy()
    shas, phashes, errors = [], [], []
    for path in table["path"].astype(str):
        sha, ph, err = "", "", ""
        try:
            data = Path(path).read_bytes()
            sha = hashlib.sha256(data).hexdigest()
            with Image.open(path) as img:
                ph = str(imagehash.phash(_gray8(img), **PHASH_PARAMS))
        except FileNotFoundError:
            err = "file not found"
        except Exception as exc:  # noqa: BLE001 - any unreadable image is reported with its reason
            err = f"could not read image ({type(exc).__name__}: {exc})"
        shas.append(sha)
        phashes.append(ph)
        errors.append(err)
    table["sha256"], table["phash"], table["error"] = shas, phashes, errors
    return table


def _given_hashes(manifest: pd.DataFrame, hashes: pd.DataFrame) -> pd.DataFrame:
    """Check that ``hashes`` (e.g. read back from ``hashes.csv``) describes exactly ``manifest``."""
    _check_manifest(manifest)
    table = _check_manifest(hashes, name="hashes")
    missing = [c for c in ("sha256", "phash", "error") if c not in table.columns]
    if missing:
        raise SchemaError(f"hashes lack column(s) {missing}; pass the table hash_images returned.")
    keys = set(zip(manifest["dataset"].astype(str), manifest["image_id"].astype(str), strict=True))
    have = set(zip(table["dataset"].astype(str), table["image_id"].astype(str), strict=True))
    if keys != have:
        odd = sorted(keys ^ have)[:5]
        raise SchemaError(f"hashes describe other images than the manifest ({len(keys - have)} "
                          f"missing, {len(have - keys)} extra, e.g. {['/'.join(k) for k in odd]}); "
                          "hash this manifest with hash_images.")
    table = table.copy()
    # a CSV round trip reads empty cells as NaN: they mean "not computed", never a hash
    for col in ("sha256", "phash", "error"):
        table[col] = table[col].astype(object).where(table[col].notna(), "").astype(str)
    return table


def hamming_pairs(hashes: ArrayLike, groups: ArrayLike | None = None, *, max_distance: int = 4,
                  block_size: int | None = None) -> tuple[NDArray[np.intp], NDArray[np.intp],
                                                           NDArray[np.uint8]]:
    """All index pairs ``i < j`` whose 64-bit hashes differ in at most ``max_distance`` bits.

    Parameters
    ----------
    hashes : array-like of uint64, shape (n,)
    groups : array-like, shape (n,), optional
        When given, only pairs from different groups are returned.
    max_distance : int, default=4
    block_size : int, optional
        Rows compared per step (default: about four million comparisons per block).

    Returns
    -------
    i, j, distance : ndarrays
        Sorted by ``(i, j)``.

    Examples
    --------
    >>> i, j, d = hamming_pairs(np.array([0, 1, 3, 2**64 - 1], dtype=np.uint64), max_distance=1)
    >>> [(int(a), int(b), int(c)) for a, b, c in zip(i, j, d)]
    [(0, 1, 1), (1, 2, 1)]
    """
    h = np.asarray(hashes)
    if h.dtype != np.uint64:
        raise MedauditError(f"hashes must be a uint64 array (see pack_hex); got dtype {h.dtype}.")
    if h.ndim != 1:
        raise MedauditError(f"hashes must be 1-dimensional; got shape {h.shape}.")
    if not 0 <= int(max_distance) <= 64:
        raise MedauditError(f"max_distance must lie in 0..64; got {max_distance!r}.")
    n = h.size
    codes = None
    if groups is not None:
        g = np.asarray(groups)
        if g.shape != (n,):
            raise MedauditError(f"groups must have shape ({n},) like hashes; got {g.shape}.")
        codes = np.unique(g, return_inverse=True)[1]
    block = int(block_size) if block_size is not None else max(1, 4_000_000 // max(n, 1))
    if block < 1:
        raise MedauditError(f"block_size must be a positive integer; got {block_size!r}.")
    out_i, out_j, out_d = [], [], []
    for start in range(0, n, block):
        stop = min(n, start + block)
        # Compare rows start..stop-1 with columns start..n-1 only: the upper triangle.
        dist = np.bitwise_count(h[start:stop, None] ^ h[None, start:])
        ok = dist <= max_distance
        m = stop - start
        ok[:, :m] &= np.triu(np.ones((m, m), dtype=bool), k=1)
        if codes is not None:
            ok &= codes[start:stop, None] != codes[None, start:]
        r, c = np.nonzero(ok)
        out_i.append(r + start)
        out_j.append(c + start)
        out_d.append(dist[r, c])
    if not out_i:
        empty = np.zeros(0, dtype=np.intp)
        return empty, empty.copy(), np.zeros(0, dtype=np.uint8)
    return (np.concatenate(out_i).astype(np.intp), np.concatenate(out_j).astype(np.intp),
            np.concatenate(out_d).astype(np.uint8))


def screen_overlap(manifest: pd.DataFrame, *, max_distance: int = 4, group_by: str = "dataset",
                   hashes: pd.DataFrame | None = None) -> OverlapResult:
    """Screen a manifest for cross-group exact and near duplicates and list the exclusions.

    Parameters
    ----------
    manifest : DataFrame
        ``dataset, image_id, path`` (and ``split`` etc., carried along).
    max_distance : int, default=4
        Largest pHash Hamming distance of a candidate pair.
    group_by : str, default="dataset"
        Column whose values must differ within a pair (methods.md M0.13 [AMBIG]: the dataset;
        use e.g. ``"split"`` to treat cohorts as groups).
    hashes : DataFrame, optional
        Output of :func:`hash_images` for this manifest, to avoid hashing twice.

    Returns
    -------
    OverlapResult
        ``pairs`` (columns :data:`PAIR_COLUMNS`, one row per unordered pair, ``a`` < ``b`` by
        ``(dataset, image_id)``; ``hamming`` is missing only for byte-identical files that could
        not be decoded), ``excluded`` (:func:`exclusion`), the hash table, parameters, versions.
    """
    table = hash_images(manifest) if hashes is None else _given_hashes(manifest, hashes)
    if group_by not in table.columns:
        raise SchemaError(f"group_by column {group_by!r} is not in the manifest; columns are "
                          f"{list(table.columns)}.")
    table = table.sort_values(["dataset", "image_id"], kind="stable").reset_index(drop=True)
    groups = table[group_by].astype(str).to_numpy()
    ok = (table["phash"] != "").to_numpy()
    idx = np.flatnonzero(ok)
    i, j, d = hamming_pairs(pack_hex(table["phash"].to_numpy()[idx].tolist()), groups[idx],
                            max_distance=max_distance)
    found: dict[tuple[int, int], int | None] = {
        (int(a), int(b)): int(c) for a, b, c in zip(idx[i], idx[j], d, strict=True)}
    # Exact duplicates, also among files that could not be decoded (they still share bytes).
    has_sha = table["sha256"] != ""
    for _, grp in table[has_sha].groupby("sha256", sort=True):
        rows = grp.index.to_numpy()
        for x in range(rows.size):
            for y in range(x + 1, rows.size):  # a handful of identical files per digest
                a, b = int(rows[x]), int(rows[y])
                if groups[a] != groups[b]:
                    found.setdefault((a, b), None)
    keys = sorted(found)
    a_idx = np.array([k[0] for k in keys], dtype=np.intp)
    b_idx = np.array([k[1] for k in keys], dtype=np.intp)
    sha = table["sha256"].to_numpy()
    pairs = pd.DataFrame({
        "dataset_a": table["dataset"].to_numpy()[a_idx].astype(str),
        "image_a": table["image_id"].to_numpy()[a_idx].astype(str),
        "dataset_b": table["dataset"].to_numpy()[b_idx].astype(str),
        "image_b": table["image_id"].to_numpy()[b_idx].astype(str),
        "sha256_match": (sha[a_idx] == sha[b_idx]) & (sha[a_idx] != ""),
        "hamming": pd.array([found[k] for k in keys], dtype="Int64"),
    })
    if group_by != "dataset":
        pairs["group_a"], pairs["group_b"] = groups[a_idx], groups[b_idx]
    params = {"max_distance": int(max_distance), "group_by": group_by, "hash": "imagehash.phash",
              **PHASH_PARAMS, "exact": "sha256 of file bytes",
              "exclusion": "every image in any candidate pair (no adjudication)"}
    return OverlapResult(hashes=table, pairs=pairs, excluded=exclusion(table, pairs),
                         params=params, versions=versions())


def exclusion(manifest: pd.DataFrame, pairs: pd.DataFrame) -> pd.DataFrame:
    """Every image that appears in any candidate pair, with the reason (conservative rule).

    Parameters
    ----------
    manifest : DataFrame
        ``dataset, image_id, path``.
    pairs : DataFrame
        Candidate pairs with columns :data:`PAIR_COLUMNS`.

    Returns
    -------
    DataFrame
        Columns exactly ``dataset, image_id, path, reason``, sorted by ``(dataset, image_id)``;
        ``reason`` names every partner with its Hamming distance and whether the bytes match.
    """
    _check_manifest(manifest)
    missing = [c for c in PAIR_COLUMNS if c not in pairs.columns]
    if missing:
        raise SchemaError(f"pairs lack column(s) {missing}; expected {list(PAIR_COLUMNS)}.")
    partners: dict[tuple[str, str], list[str]] = {}
    for row in pairs.itertuples(index=False):
        ham = "n/a" if pd.isna(row.hamming) else int(row.hamming)
        tag = f"hamming {ham}" + (", identical bytes" if bool(row.sha256_match) else "")
        for me, other in (((row.dataset_a, row.image_a), (row.dataset_b, row.image_b)),
                          ((row.dataset_b, row.image_b), (row.dataset_a, row.image_a))):
            key = (str(me[0]), str(me[1]))
            partners.setdefault(key, []).append(f"{other[0]}/{other[1]} ({tag})")
    paths = {(str(d), str(i)): str(p) for d, i, p in
             zip(manifest["dataset"], manifest["image_id"], manifest["path"], strict=True)}
    unknown = sorted(k for k in partners if k not in paths)
    if unknown:
        shown = ", ".join("/".join(k) for k in unknown[:5])
        raise SchemaError(f"{len(unknown)} image(s) of the pairs are not in the manifest "
                          f"(e.g. {shown}); screen and exclude with the same manifest.")
    keys = sorted(partners)
    return pd.DataFrame({
        "dataset": [k[0] for k in keys], "image_id": [k[1] for k in keys],
        "path": [paths[k] for k in keys],
        "reason": ["overlap candidate with " + "; ".join(sorted(partners[k])) for k in keys],
    }, columns=list(EXCLUSION_COLUMNS))


def apply_exclusion(manifest: pd.DataFrame, excluded: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Remove excluded images; every retained row keeps its original split and labels.

    Returns
    -------
    retained : DataFrame
        The manifest's rows not excluded, in the manifest's order, unchanged.
    counts : DataFrame
        ``dataset, split, n_before, n_excluded, n_retained`` (``split`` is '' when the manifest
        has none), so the filter reports what it removed.
    """
    _check_manifest(manifest)
    missing = [c for c in EXCLUSION_COLUMNS if c not in excluded.columns]
    if missing:
        raise SchemaError(f"exclusion table lacks column(s) {missing}; expected "
                          f"{list(EXCLUSION_COLUMNS)}.")
    key = manifest["dataset"].astype(str) + "\x00" + manifest["image_id"].astype(str)
    ex_key = set(excluded["dataset"].astype(str) + "\x00" + excluded["image_id"].astype(str))
    unknown = ex_key - set(key)
    if unknown:
        shown = ", ".join(sorted(k.replace("\x00", "/") for k in unknown)[:5])
        raise SchemaError(f"{len(unknown)} excluded image(s) are not in the manifest (e.g. {shown}).")
    drop = key.isin(ex_key).to_numpy()
    split = manifest["split"].astype(str) if "split" in manifest.columns else pd.Series(
        "", index=manifest.index)
    counts = (pd.DataFrame({"dataset": manifest["dataset"].astype(str), "split": split, "drop": drop})
              .groupby(["dataset", "split"], sort=True)["drop"].agg(["size", "sum"]).reset_index())
    counts = counts.rename(columns={"size": "n_before", "sum": "n_excluded"})
    counts["n_excluded"] = counts["n_excluded"].astype(int)
    counts["n_retained"] = counts["n_before"] - counts["n_excluded"]
    return manifest.loc[~drop], counts


def write_overlap(result: OverlapResult, out: str | os.PathLike[str], *, overwrite: bool = False) -> Path:
    """Write ``hashes.csv``, ``pairs.csv``, ``exclusion.csv`` and ``overlap.json`` atomically."""
    from medaudit.io.output import atomic_directory, write_json

    out = Path(out)
    with atomic_directory(out, overwrite=overwrite) as tmp:
        result.hashes.to_csv(tmp / "hashes.csv", index=False)
        result.pairs.to_csv(tmp / "pairs.csv", index=False)
        result.excluded.to_csv(tmp / "exclusion.csv", index=False)
        write_json(tmp / "overlap.json", result.to_dict())
    return out
