"""Data for the supervised source model: manifests, the exclusion list, the split, transforms.

Everything here except :func:`train_transform`, :func:`eval_transform` and
:class:`ImageDataset` is pandas/numpy only; torch and torchvision are imported inside
those functions.  Nothing is dropped silently: every filter returns its counts.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from medaudit._validation import as_generator
from medaudit.exceptions import SchemaError
from medaudit.io.schema import row_places
from medaudit.io.tables import read_table

__all__ = ["IMAGENET_MEAN", "IMAGENET_STD", "Manifest", "load_manifest", "load_exclusion",
           "apply_exclusion", "stratified_split", "pos_weight", "train_transform",
           "eval_transform", "ImageDataset", "seed_worker"]

IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)
EXCLUSION_COLUMNS = ("dataset", "image_id", "path", "reason")


@dataclass(frozen=True)
class Manifest:
    """A cohort's images: ``frame`` has image_id, path (absolute), label, stratum, dataset,
    cohort (and negative_group when declared); ``counts`` records every filter."""

    frame: pd.DataFrame
    counts: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return dict(self.counts)


def _first(values, k: int = 5) -> str:
    values = list(values)
    return f"{values[:k]}{' ...' if len(values) > k else ''}"


def _undecodable(paths) -> list[str]:
    """The paths among ``paths`` whose image Pillow cannot decode completely (with why)."""
    from PIL import Image

    bad = []
    for p in paths:
        try:
            with Image.open(p) as im:
                im.load()
        except (OSError, ValueError, SyntaxError) as exc:  # truncated, corrupt, not an image
            bad.append(f"{p} ({type(exc).__name__}: {exc})")
    return bad


def load_manifest(spec, base_dir: str | Path = ".", *, stratify_column: str | None = None,
                  check_files: bool = True) -> Manifest:
    """Read one manifest CSV as the tidy image table of a cohort.

    Parameters
    ----------
    spec : ManifestSpec
        Which file, which columns, which rows.
    base_dir : path
        Folder that relative manifest paths are resolved against (the spec's folder).
    stratify_column : str, optional
        Column copied to ``stratum`` (default: the label column).
    check_files : bool, default=True
        Refuse the manifest when an image file does not exist (listing them).

    Returns
    -------
    Manifest
    """
    base_dir = Path(base_dir)
    path = Path(spec.manifest)
    path = path if path.is_absolute() else (base_dir / path)
    if not path.exists():
        raise FileNotFoundError(f"manifest {str(path)!r} of cohort {spec.cohort!r} does not exist.")
    # through io.tables: a BOM, a ';' header and repeated columns are refused there, and
    # messages can name the file's lines
    raw = read_table(path, what="manifest", dtype=str, na_values=[])
    where = f"manifest {str(path)!r} (cohort {spec.cohort!r})"
    stratify = stratify_column or spec.label_column
    need = [spec.id_column, spec.path_column, spec.label_column, stratify, *spec.select, *spec.match]
    if spec.negative_group_column:
        need.append(spec.negative_group_column)
    missing = sorted({c for c in need if c not in raw.columns})
    if missing:
        raise SchemaError(f"{where}: missing column(s) {missing}; it has {list(raw.columns)}. "
                          "Name the columns in the spec (id_column, path_column, label_column, "
                          "stratify_column, select, negative_group_column).")
    counts: dict[str, Any] = {"file": str(path.resolve()), "rows": int(len(raw))}
    keep = np.ones(len(raw), dtype=bool)
    for col, values in spec.select.items():
        hit = raw[col].isin([str(v) for v in values]).to_numpy()
        counts[f"select {col} in {list(values)}"] = {"kept": int((keep & hit).sum()),
                                                     "removed": int((keep & ~hit).sum())}
        keep &= hit
    for col, pattern in spec.match.items():
        hit = np.array([re.search(pattern, v) is not None for v in raw[col]], dtype=bool)
        counts[f"match {col} ~ {pattern}"] = {"kept": int((keep & hit).sum()),
                                              "removed": int((keep & ~hit).sum())}
        keep &= hit
    t = raw.loc[keep].reset_index(drop=True)
    kept = np.flatnonzero(keep)

    def lines(mask: np.ndarray) -> str:  # rows of t as the file's lines (or rows)
        full = np.zeros(len(raw), dtype=bool)
        full[kept[mask]] = True
        return row_places(raw, full)

    if t.empty:
        raise SchemaError(f"{where}: no row is left after `select` {spec.select} / `match` "
                          f"{spec.match}; counts {counts}.")
    empty = (t[[spec.id_column, spec.path_column]] == "").any(axis=1).to_numpy()
    if empty.any():
        raise SchemaError(f"{where}: empty {spec.id_column!r}/{spec.path_column!r} at "
                          f"{lines(empty)}; every image needs both.")
    bad = ~t[spec.label_column].isin(["0", "1"]).to_numpy()
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise SchemaError(f"{where}: column {spec.label_column!r} must be 0 or 1 (1 = positive); "
                          f"{int(bad.sum())} row(s) are not, e.g. image {t[spec.id_column].iloc[i]!r} "
                          f"has {t[spec.label_column].iloc[i]!r} ({lines(bad)}). medaudit never "
                          "guesses a label.")
    dup = t[spec.id_column].duplicated(keep=False).to_numpy()
    if dup.any():
        raise SchemaError(f"{where}: {int(dup.sum())} rows repeat an image id, e.g. "
                          f"{_first(sorted(set(t.loc[dup, spec.id_column])))} ({lines(dup)}); ids "
                          "must be unique.")
    if spec.image_root is None:
        root = path.parent
    else:
        root = Path(spec.image_root)
        root = root if root.is_absolute() else (base_dir / root)
    paths = [str(p if (p := Path(v)).is_absolute() else (root / p).resolve())
             for v in t[spec.path_column]]
    if spec.dataset is not None:
        dataset = pd.Series(spec.dataset, index=t.index)
    elif "dataset" in t.columns:
        dataset = t["dataset"]
    else:
        dataset = pd.Series(spec.cohort, index=t.index)
    out = pd.DataFrame({"image_id": t[spec.id_column].to_numpy(), "path": paths,
                        "label": t[spec.label_column].astype(np.int64).to_numpy(),
                        "stratum": t[stratify].astype(str).to_numpy(),
                        "dataset": dataset.astype(str).to_numpy(), "cohort": spec.cohort})
    if spec.negative_group_column:
        ng = t[spec.negative_group_column].to_numpy(dtype=object)
        out["negative_group"] = np.where(out["label"].to_numpy() == 1, "", ng)
    out = out.sort_values("image_id", kind="stable").reset_index(drop=True)
    if spec.max_per_label is not None:
        before = len(out)
        out = out.groupby("label", sort=True).head(spec.max_per_label)
        out = out.sort_values("image_id", kind="stable").reset_index(drop=True)
        counts[f"max_per_label {spec.max_per_label}"] = {"kept": int(len(out)),
                                                         "removed": int(before - len(out))}
    if check_files:
        absent = [p for p in out["path"] if not Path(p).is_file()]
        if absent:
            raise FileNotFoundError(f"{where}: {len(absent)} image file(s) do not exist, e.g. "
                                    f"{_first(absent, 3)}; check image_root / {spec.path_column!r}.")
        # every image decoded once now, not when an epoch reaches it: a truncated file found
        # in the second seed's training would cost the first seed's work and leave a
        # half-written run folder
        broken = _undecodable(out["path"])
        if broken:
            raise SchemaError(f"{where}: {len(broken)} image file(s) cannot be decoded, e.g. "
                              f"{_first(broken, 3)}; replace them or remove their rows.")
    counts.update(images=int(len(out)), positives=int(out["label"].sum()),
                  negatives=int((out["label"] == 0).sum()))
    return Manifest(frame=out, counts=counts)


def load_exclusion(path: str | Path) -> pd.DataFrame:
    """Read an overlap-screen exclusion CSV (``dataset, image_id, path, reason``).

    Returns one row per distinct (dataset, image_id) with the reasons joined by ``"; "``
    (an image can be implicated by several candidate pairs).
    """
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"exclusion list {str(path)!r} does not exist.")
    t = pd.read_csv(path, dtype=str, keep_default_na=False)
    missing = [c for c in ("dataset", "image_id") if c not in t.columns]
    if missing:
        raise SchemaError(f"exclusion list {str(path)!r}: missing column(s) {missing}; expected "
                          f"{list(EXCLUSION_COLUMNS)} (the overlap screen's output).")
    empty = (t[["dataset", "image_id"]] == "").any(axis=1).to_numpy()
    if empty.any():
        raise SchemaError(f"exclusion list {str(path)!r}: empty dataset/image_id at data row(s) "
                          f"{_first(np.flatnonzero(empty))}; every excluded image needs both.")
    if "reason" not in t.columns:
        t["reason"] = ""
    return (t.groupby(["dataset", "image_id"], sort=True)["reason"]
            .agg(lambda r: "; ".join(sorted({x for x in r if x}))).reset_index())


def apply_exclusion(frame: pd.DataFrame, exclusion: pd.DataFrame) -> tuple[pd.DataFrame, dict]:
    """Drop every image whose (dataset, image_id) the exclusion lists; return the rest and counts.

    The counts are Table 19's columns: original, excluded, retained, positives and
    negatives retained.
    """
    key = pd.MultiIndex.from_frame(frame[["dataset", "image_id"]])
    hit = key.isin(pd.MultiIndex.from_frame(exclusion[["dataset", "image_id"]]))
    kept = frame.loc[~hit].reset_index(drop=True)
    counts = {"original": int(len(frame)), "excluded": int(hit.sum()), "retained": int(len(kept)),
              "positives_retained": int(kept["label"].sum()),
              "negatives_retained": int((kept["label"] == 0).sum())}
    return kept, counts


def stratified_split(image_ids, strata, *, selection_fraction: float = 0.2, rng=2026) -> np.ndarray:
    """Fixed stratified split: ``True`` marks the selection subset, ``False`` optimisation.

    Within each stratum (in sorted order) the images, sorted by id, are permuted with
    one generator and the first ``floor(fraction * n + 1/2)`` go to selection, so the
    split depends on the ids and the seed only -- not on the manifest's row order -- and
    each stratum's selection share is within half an image of ``fraction``.

    Parameters
    ----------
    image_ids : array-like of str, shape (n,)
    strata : array-like, shape (n,)
        Original class of each image (paper 000: TB / healthy / sick).
    selection_fraction : float, default=0.2
    rng : int, Generator or None, default=2026
        The split seed (paper 000: 2026).

    Examples
    --------
    >>> m = stratified_split([f"i{k}" for k in range(10)], [0] * 5 + [1] * 5, rng=0)
    >>> int(m.sum()), int(m[:5].sum())
    (2, 1)
    """
    ids = np.asarray(image_ids, dtype=str)
    st = np.asarray(strata).astype(str)
    if ids.shape != st.shape or ids.ndim != 1:
        raise SchemaError(f"image_ids and strata must be 1-D of equal length; got {ids.shape} "
                          f"and {st.shape}.")
    if np.unique(ids).size != ids.size:
        raise SchemaError("image_ids repeat a value; the split needs unique ids.")
    if not 0.0 < selection_fraction < 1.0:
        raise SchemaError(f"selection_fraction must lie in (0, 1); got {selection_fraction!r}.")
    gen, _ = as_generator(rng)
    order = np.argsort(ids, kind="stable")
    selection = np.zeros(ids.size, dtype=bool)
    for s in np.unique(st):  # sorted
        idx = order[st[order] == s]
        n_sel = int(np.floor(selection_fraction * idx.size + 0.5))
        selection[idx[gen.permutation(idx.size)[:n_sel]]] = True
    return selection


def pos_weight(y_true) -> float:
    """``pos_weight = negatives / positives`` of the optimisation subset (BCE class weighting).

    >>> pos_weight([1, 0, 0, 0, 0])
    4.0
    """
    y = np.asarray(y_true)
    n_pos = int((y == 1).sum())
    n_neg = int((y == 0).sum())
    if n_pos + n_neg != y.size:
        raise SchemaError("labels must be 0 or 1 to compute pos_weight.")
    if n_pos == 0 or n_neg == 0:
        raise SchemaError(f"the optimisation subset has {n_pos} positive(s) and {n_neg} "
                          "negative(s); weighted BCE needs both.")
    return n_neg / n_pos


def train_transform(image_size: int):
    """Training augmentation of paper 000 M0.12 (no flips), then ImageNet normalisation.

    RandomResizedCrop (area 0.85-1.00, ratio 0.95-1.05) -> RandomAffine (rotation <= 5
    degrees, translation <= 2 %) -> ColorJitter (brightness and contrast 0.10) ->
    tensor -> Normalize.  [AMBIG in M0.12: the order; crop first keeps the affine's
    border fill small.]  Uses torch's global generator (seeded and checkpointed by the
    trainer).
    """
    from torchvision import transforms as T

    return T.Compose([
        T.RandomResizedCrop(image_size, scale=(0.85, 1.00), ratio=(0.95, 1.05), antialias=True),
        T.RandomAffine(degrees=5, translate=(0.02, 0.02)),
        T.ColorJitter(brightness=0.10, contrast=0.10),
        T.ToTensor(),
        T.Normalize(IMAGENET_MEAN, IMAGENET_STD),
    ])


def eval_transform(image_size: int, resize: int):
    """Evaluation transform: shorter side to ``resize`` (256), centre crop ``image_size`` (224)."""
    from torchvision import transforms as T

    return T.Compose([
        T.Resize(resize, antialias=True),
        T.CenterCrop(image_size),
        T.ToTensor(),
        T.Normalize(IMAGENET_MEAN, IMAGENET_STD),
    ])


class ImageDataset:
    """Map-style dataset over image files: item ``i`` is ``(tensor, label, i)``.

    The index travels with the batch so the trainer can report exactly which images each
    batch held.  Images are read as RGB (grayscale radiographs are replicated).
    """

    def __init__(self, paths, labels, transform):
        self.paths = list(paths)
        self.labels = np.asarray(labels, dtype=np.float32)
        if len(self.paths) != self.labels.size:
            raise SchemaError("paths and labels differ in length.")
        self.transform = transform

    def __len__(self) -> int:
        return len(self.paths)

    def __getitem__(self, i: int):
        from PIL import Image

        from medaudit.imaging.pixels import to_rgb

        try:
            with Image.open(self.paths[i]) as im:
                img = to_rgb(im)  # a 16-bit image is mapped, not clipped at 255
        except (OSError, ValueError, SyntaxError) as exc:  # truncated, corrupt: name the file
            from medaudit.exceptions import MedauditError

            raise MedauditError(f"{self.paths[i]}: the image cannot be decoded ({exc}); replace "
                                "or remove it from the manifest.") from exc
        return self.transform(img), self.labels[i], i


def seed_worker(worker_id: int) -> None:
    """DataLoader ``worker_init_fn``: seed numpy and ``random`` from the worker's torch seed."""
    import random

    import torch

    s = torch.initial_seed() % 2**32
    np.random.seed(s)  # noqa: NPY002 - the legacy global stream is state we save/restore
    random.seed(s)
