"""Real offline models for the NIH expert-reader images, with no downloaded weights.

Three feature extractors, each turned into per-finding scores by a linear probe
(scikit-learn ``LogisticRegression`` on standardised features) scored **out of fold**:

* ``pixels``: the image block-averaged to 16 x 16 (down-sampled pixels);
* ``hog``: histogram of oriented gradients (scikit-image) on the 64 x 64 block average;
* ``cnn``: a small convolutional network trained from scratch (torch, CPU, seeded) on the
  training folds only, multi-label over the findings; its pooled features feed the probe.

Folds come from ``StratifiedGroupKFold`` (stratified on the majority ``Abnormal`` label,
grouped by patient, seeded), shared by every extractor and finding, so no image is scored
by a model (network or probe) that saw it or another image of the same patient.  The
declared alternative (``split="holdout"``) is paper 001's protocol (M1.1): one fixed-seed
30 % test split (:func:`holdout_split`, stratified and grouped the same way); models train
on the other 70 % and only the test images are scored.  Probe
labels are the readers' majority vote (paper 001 trains probes on hard labels, M1.5).
Everything is deterministic for a given ``rng`` (torch runs single-threaded with
deterministic algorithms).  torch, scikit-image, scikit-learn and Pillow are imported
inside the functions.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from medaudit._validation import RNGLike, as_generator
from medaudit._versions import versions
from medaudit.exceptions import MedauditError, SchemaError
from medaudit.imaging.pixels import to_8bit

__all__ = ["ProbeResult", "DEFAULT_FINDINGS", "EXTRACTORS", "SPLITS", "load_nih_images",
           "majority_labels", "make_folds", "holdout_split", "pixel_features", "hog_features",
           "oof_probe", "holdout_probe", "nih_probe_scores"]

#: findings with at least 30 majority-positive images among the 810 (enough for 5 folds)
DEFAULT_FINDINGS = ("Abnormal", "Atelectasis", "Cardiomegaly", "Consolidation", "Effusion",
                    "Infiltration", "Mass", "Nodule", "Pleural Thickening", "Pneumothorax")
EXTRACTORS = ("pixels", "hog", "cnn")
#: how images are scored: out of fold (every image, k folds) or paper 001's hold-out test set
SPLITS = ("out_of_fold", "holdout")


@dataclass(frozen=True)
class ProbeResult:
    """Out-of-fold probe scores and how they were made.

    Attributes
    ----------
    scores : DataFrame
        Long ScoreTable ``image_id, cohort (finding), model (probe_<extractor>), prompt
        ("none"), score, patient_id, split`` (``"fold<k>"`` out of fold; ``"test"`` under
        the hold-out split, which scores the test images only); no label column (labels
        come from the reader annotations).
    folds : DataFrame
        Out of fold: ``image_id, patient_id, fold`` (the fold each image is scored in).
        Hold-out: ``image_id, patient_id, split`` (``"train"`` or ``"test"``).
    settings : dict
        Seeds, fold count, extractor and probe settings, library versions.
    """

    scores: pd.DataFrame
    folds: pd.DataFrame
    settings: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"settings": self.settings, "n_scores": int(len(self.scores)),
                "n_images": int(len(self.folds))}


def _block_mean(images: np.ndarray, size: int) -> np.ndarray:
    """Average non-overlapping blocks: (n, H, W) -> (n, size, size); H and W multiples of size."""
    n, h, w = images.shape
    if h % size or w % size:
        raise MedauditError(f"image size {h}x{w} is not a multiple of {size}.")
    return images.reshape(n, size, h // size, size, w // size).mean(axis=(2, 4))


def load_nih_images(root: str | Path | None = None, image_ids: Sequence[str] | None = None
                    ) -> tuple[np.ndarray, np.ndarray]:
    """The 256 px grayscale PNGs as float arrays in [0, 1], in sorted id order.

    Returns ``(image_ids, images)`` with images of shape (n, 256, 256).  A missing file or
    an image of another size is an error naming it.
    """
    from PIL import Image

    from medaudit.datasets._common import _root

    base = _root(root, "nih_cxr14_google_expert_readers") / "images_256"
    ids = sorted(image_ids) if image_ids is not None else sorted(p.name for p in base.glob("*.png"))
    if not ids:
        raise SchemaError(f"{base}: no PNG images found.")
    out = np.empty((len(ids), 256, 256), dtype=np.float64)
    for i, name in enumerate(ids):
        path = base / name
        if not path.is_file():
            raise FileNotFoundError(f"image {str(path)!r} does not exist.")
        with Image.open(path) as im:
            # 16-bit files by the one rule of imaging.pixels (convert("L") clips at 255)
            arr = np.asarray(to_8bit(im).convert("L"), dtype=np.float64)
        if arr.shape != (256, 256):
            raise SchemaError(f"{path}: expected 256x256 pixels; got {arr.shape}.")
        out[i] = arr / 255.0
    return np.asarray(ids, dtype=object), out


def majority_labels(annotations: pd.DataFrame) -> pd.DataFrame:
    """Hard majority label per (cohort, item): ``mean(rating) > 0.5`` (ties are negative).

    Returns ``cohort, item_id, n_annotations, label``.
    """
    g = annotations.groupby(["cohort", "item_id"], sort=True)["rating"]
    out = g.agg(n_annotations="size", mean="mean").reset_index()
    out["label"] = (out["mean"] > 0.5).astype(np.int64)
    return out.drop(columns="mean")


def make_folds(y: np.ndarray, groups: np.ndarray, *, n_splits: int = 5, rng: RNGLike = 0) -> np.ndarray:
    """Fold index (0..n_splits-1) per item: stratified on ``y``, grouped by ``groups``, seeded."""
    from sklearn.model_selection import StratifiedGroupKFold

    gen, _ = as_generator(rng)
    seed = int(gen.integers(2**31 - 1))
    y = np.asarray(y)
    if len(np.unique(y)) < 2 or min(np.bincount(y.astype(int))) < n_splits:
        raise MedauditError(f"make_folds: each class needs at least n_splits={n_splits} items; got "
                            f"counts {np.bincount(y.astype(int)).tolist()}.")
    fold = np.full(len(y), -1, dtype=np.int64)
    cv = StratifiedGroupKFold(n_splits=n_splits, shuffle=True, random_state=seed)
    for k, (_, test) in enumerate(cv.split(np.zeros(len(y)), y, groups)):
        fold[test] = k
    return fold


def holdout_split(y: np.ndarray, groups: np.ndarray | None = None, *, test_size: float = 0.3,
                  stratify: bool = True, rng: RNGLike = 0) -> np.ndarray:
    """Test-set mask of a fixed-seed hold-out split (paper 001's 30 % test split, M1.1).

    Paper 001: "For datasets without a predefined test split, we select a 30% test set
    with a fixed random seed" (the seed is not given).  The split is scikit-learn's
    ``train_test_split`` with ``random_state`` drawn once from ``rng`` (recorded by the
    caller), stratified on ``y`` when ``stratify`` (the paper does not say; stratifying
    keeps both classes in both parts of small tasks).  With ``groups`` (e.g. patients)
    whole groups are split -- ``test_size`` is then the fraction of *groups*, stratified
    on each group's ``max(y)`` -- so no group has items on both sides; the item fraction
    is close to, not exactly, ``test_size``.

    Parameters
    ----------
    y : array-like of shape (n_items,)
        Binary labels (the stratification label).
    groups : array-like of shape (n_items,), optional
        Group of each item (no group is split).
    test_size : float, default=0.3
    stratify : bool, default=True
    rng : int, Generator or None, default=0
        Source of the one ``random_state``.

    Returns
    -------
    ndarray of bool, shape (n_items,)
        True for test items.

    Examples
    --------
    >>> test = holdout_split(np.tile([0, 1], 10), rng=1)
    >>> int(test.sum()), int(test[1::2].sum())
    (6, 3)
    """
    from sklearn.model_selection import train_test_split

    from medaudit._validation import check_fraction

    test_size = check_fraction(test_size, name="test_size")
    y = np.asarray(y)
    gen, _ = as_generator(rng)
    seed = int(gen.integers(2**31 - 1))
    if groups is None:
        units, label = np.arange(y.size), y
    else:
        groups = np.asarray(groups)
        if groups.shape != y.shape:
            raise MedauditError(f"holdout_split: groups has shape {groups.shape}, y {y.shape}.")
        units, inv = np.unique(groups, return_inverse=True)
        label = np.zeros(units.size, dtype=y.dtype)
        np.maximum.at(label, inv.reshape(-1), y)
    counts = np.bincount(np.asarray(label, dtype=np.int64), minlength=2)
    if stratify and counts.min() < 2:
        raise MedauditError(f"holdout_split: stratifying needs at least 2 "
                            f"{'groups' if groups is not None else 'items'} of each class; got "
                            f"counts {counts.tolist()}.  Pass stratify=False.")
    _, test_units = train_test_split(units, test_size=test_size, random_state=seed,
                                     stratify=label if stratify else None)
    return np.isin(groups if groups is not None else np.arange(y.size), test_units)


def pixel_features(images: np.ndarray, *, size: int = 16) -> np.ndarray:
    """Down-sampled pixels: block means to ``size`` x ``size``, flattened."""
    return _block_mean(np.asarray(images, dtype=np.float64), size).reshape(len(images), -1)


def hog_features(images: np.ndarray, *, size: int = 64, orientations: int = 9,
                 pixels_per_cell: int = 8, cells_per_block: int = 2) -> np.ndarray:
    """HOG descriptors (scikit-image, L2-Hys blocks) of the ``size`` x ``size`` block means."""
    from skimage.feature import hog

    small = _block_mean(np.asarray(images, dtype=np.float64), size)
    return np.stack([hog(im, orientations=orientations, pixels_per_cell=(pixels_per_cell,) * 2,
                         cells_per_block=(cells_per_block,) * 2, block_norm="L2-Hys",
                         feature_vector=True) for im in small])


def _probe(x_train: np.ndarray, y_train: np.ndarray, x_test: np.ndarray, *, C: float,
           where: str) -> np.ndarray:
    """``predict_proba[:, 1]`` on ``x_test`` of a standardised L2 logistic probe fitted on the train rows."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    if len(np.unique(y_train)) < 2:
        raise MedauditError(f"{where}: one class only; use fewer folds or a finding with more "
                            "positives.")
    model = make_pipeline(StandardScaler(), LogisticRegression(C=C, max_iter=5000))
    model.fit(x_train, y_train)
    return model.predict_proba(x_test)[:, 1]


def oof_probe(features: np.ndarray, y: np.ndarray, folds: np.ndarray, *, C: float = 0.05,
              where: str = "probe") -> np.ndarray:
    """Out-of-fold ``predict_proba[:, 1]`` of a standardised logistic-regression probe.

    For each fold k the probe is fitted on the items of the other folds only and scores
    the items of fold k; ``features`` may also be a list with one matrix per fold (rows
    for all items, as produced by a per-fold feature extractor such as the CNN).
    """
    y = np.asarray(y)
    folds = np.asarray(folds)
    scores = np.full(len(y), np.nan)
    for k in np.unique(folds):
        test = folds == k
        x = features[k] if isinstance(features, list) else features
        scores[test] = _probe(x[~test], y[~test], x[test], C=C,
                              where=f"{where}: the training folds for fold {k}")
    return scores


def holdout_probe(features: np.ndarray, y: np.ndarray, test: np.ndarray, *, C: float = 0.05,
                  where: str = "probe") -> np.ndarray:
    """Test-set ``predict_proba[:, 1]`` of the standardised probe fitted on the other items.

    Returns an array over all items, NaN outside the test set (those items trained it).
    """
    y = np.asarray(y)
    test = np.asarray(test, dtype=bool)
    scores = np.full(len(y), np.nan)
    scores[test] = _probe(features[~test], y[~test], features[test], C=C,
                          where=f"{where}: the training split")
    return scores


def _cnn_fold_features(images64: np.ndarray, targets: np.ndarray, train: np.ndarray, *,
                       seed: int, epochs: int, batch_size: int = 64, lr: float = 2e-3) -> np.ndarray:
    """Train a small CNN on the ``train`` rows (multi-label BCE); return pooled features of all rows."""
    import torch
    from torch import nn

    torch.manual_seed(seed)
    net = nn.Sequential(
        nn.Conv2d(1, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(8, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(32, 32, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten())
    head = nn.Linear(32, targets.shape[1])
    opt = torch.optim.Adam([*net.parameters(), *head.parameters()], lr=lr)
    x_all = torch.from_numpy(images64[:, None].astype(np.float32))
    x_tr = x_all[torch.from_numpy(np.flatnonzero(train))]
    y_tr = torch.from_numpy(targets[train].astype(np.float32))
    gen = torch.Generator().manual_seed(seed)
    loss_fn = nn.BCEWithLogitsLoss()
    net.train()
    for _ in range(epochs):
        order = torch.randperm(len(x_tr), generator=gen)
        for start in range(0, len(order), batch_size):
            idx = order[start:start + batch_size]
            if len(idx) < 2:  # batch norm needs two items
                continue
            opt.zero_grad()
            loss = loss_fn(head(net(x_tr[idx])), y_tr[idx])
            loss.backward()
            opt.step()
    net.eval()
    with torch.no_grad():
        return net(x_all).numpy().astype(np.float64)


def nih_probe_scores(annotations: pd.DataFrame, *, root: str | Path | None = None,
                     findings: Sequence[str] = DEFAULT_FINDINGS,
                     extractors: Sequence[str] = EXTRACTORS, n_splits: int = 5, rng: RNGLike = 0,
                     cnn_epochs: int = 12, C: float = 0.05,
                     image_ids: Sequence[str] | None = None, split: str = "out_of_fold",
                     test_size: float = 0.3, progress: Any = None) -> ProbeResult:
    """Scores of every extractor's probe for every finding on the NIH images.

    Out of fold (default: every image scored by models that never saw its patient), or on
    paper 001's fixed-seed hold-out test set (``split="holdout"``, M1.1).

    Parameters
    ----------
    annotations : DataFrame
        The reader table of :func:`medaudit.datasets.annotations.read_nih_readers` (``item_id,
        annotator, rating, cohort, patient_id``); probes train on the majority labels.
    findings : sequence of str
        Cohorts to score; the folds are stratified on ``Abnormal`` when it is among them,
        else on the first finding.
    extractors : sequence of {"pixels", "hog", "cnn"}
    n_splits : int, default=5
        Folds of the out-of-fold protocol (unused under ``holdout``).
    rng : int, Generator or None
        Seeds the folds (or the hold-out split) and the CNN (one integer seed per fold
        drawn from it).
    cnn_epochs : int, default=12
    C : float, default=0.05
        Inverse L2 strength of the probes (strong regularisation: 650 training images).
    image_ids : sequence of str, optional
        Restrict to these images (tests use a subset); default: every annotated image.
    split : {"out_of_fold", "holdout"}, default="out_of_fold"
        ``holdout``: one :func:`holdout_split` (stratified on the same label, grouped by
        patient, fixed seed from ``rng``); every model (CNN and probes) trains on the
        training part only and only the test images are scored (``split = "test"``).
    test_size : float, default=0.3
        Hold-out fraction (paper 001: 30 %; of patients, since patients are not split).
    progress : callable, optional
        Called with a short text at each step.
    """
    from medaudit._validation import check_option

    check_option(split, SPLITS, name="split")
    bad = [e for e in extractors if e not in EXTRACTORS]
    if bad or not extractors:
        raise MedauditError(f"extractors must be a non-empty subset of {EXTRACTORS}; got {list(extractors)}.")
    missing = [f for f in findings if f not in set(annotations["cohort"])]
    if missing or not findings:
        raise MedauditError(f"findings {missing or []} have no annotations; the table has "
                            f"{sorted(set(annotations['cohort']))}.")
    if "patient_id" not in annotations.columns:
        raise SchemaError("annotations need a 'patient_id' column: folds are grouped by patient.")
    tick = progress or (lambda _s: None)
    gen, rng_record = as_generator(rng)
    labels = majority_labels(annotations[annotations["cohort"].isin(findings)])
    wide = labels.pivot(index="item_id", columns="cohort", values="label")
    if wide.isna().any().any():
        raise SchemaError("every image needs reads for every finding; some (image, finding) pairs "
                          f"have none, e.g. {wide[wide.isna().any(axis=1)].index[:3].tolist()}.")
    if image_ids is not None:
        unknown = sorted(set(image_ids) - set(wide.index))
        if unknown:
            raise SchemaError(f"image_ids not in the annotations: {unknown[:5]}.")
        wide = wide.loc[sorted(image_ids)]
    patient = annotations.drop_duplicates("item_id").set_index("item_id")["patient_id"]
    ids = np.asarray(wide.index, dtype=object)
    groups = patient.loc[ids].to_numpy()
    strat = "Abnormal" if "Abnormal" in findings else findings[0]
    holdout = split == "holdout"
    if holdout:
        test = holdout_split(wide[strat].to_numpy(dtype=int), groups, test_size=test_size, rng=gen)
        folds = np.where(test, 0, 1)  # "fold" 0 is scored, by models trained on the rest
        labels_of = np.where(test, "test", "train")
    else:
        folds = make_folds(wide[strat].to_numpy(dtype=int), groups, n_splits=n_splits, rng=gen)
        labels_of = np.array([f"fold{k}" for k in folds], dtype=object)
    tick("probes: loading images")
    _, images = load_nih_images(root, list(ids))
    y = wide[list(findings)].to_numpy(dtype=int)
    fold_seeds = [int(s) for s in gen.integers(2**31 - 1, size=1 if holdout else n_splits)]
    feats: dict[str, Any] = {}
    for ext in extractors:
        tick(f"probes: {ext} features")
        if ext == "pixels":
            feats[ext] = pixel_features(images)
        elif ext == "hog":
            feats[ext] = hog_features(images)
        else:
            feats[ext] = _cnn_features(images, y, folds, fold_seeds, epochs=cnn_epochs, tick=tick,
                                       scored=(0,) if holdout else None)
    frames = []
    keep = folds == 0 if holdout else np.ones(len(ids), dtype=bool)
    for ext in extractors:
        for j, f in enumerate(findings):
            tick(f"probes: {ext} probe for {f}")
            where = f"probe_{ext} / {f}"
            x = feats[ext][0] if holdout and isinstance(feats[ext], list) else feats[ext]
            s = (holdout_probe(x, y[:, j], folds == 0, C=C, where=where) if holdout else
                 oof_probe(x, y[:, j], folds, C=C, where=where))
            frames.append(pd.DataFrame({"image_id": ids[keep], "cohort": f, "model": f"probe_{ext}",
                                        "prompt": "none", "score": s[keep],
                                        "patient_id": groups[keep], "split": labels_of[keep]}))
    scores = pd.concat(frames, ignore_index=True).sort_values(
        ["cohort", "model", "image_id"], kind="stable", ignore_index=True)
    settings = {"rng": rng_record, "split": split,
                **({"test_size": test_size, "n_test": int(keep.sum()), "n_train": int((~keep).sum()),
                    "test_fraction": float(keep.mean())} if holdout else {"n_splits": n_splits}),
                "fold_seeds": fold_seeds,
                "stratified_on": strat, "grouped_by": "patient_id", "findings": list(findings),
                "extractors": list(extractors), "probe": {"C": C, "model": "StandardScaler + "
                                                          "LogisticRegression(lbfgs)"},
                "pixels": {"size": 16}, "hog": {"size": 64, "orientations": 9, "pixels_per_cell": 8,
                                                "cells_per_block": 2},
                "cnn": {"epochs": cnn_epochs, "input": 64, "threads": 1},
                "versions": versions("numpy", "sklearn", "skimage", "torch", "PIL", interpreter=False)}
    table = {"image_id": ids, "patient_id": groups}
    table.update({"split": labels_of} if holdout else {"fold": folds})
    return ProbeResult(scores=scores, folds=pd.DataFrame(table), settings=settings)


def _cnn_features(images: np.ndarray, y: np.ndarray, folds: np.ndarray, seeds: list[int], *,
                  epochs: int, tick: Any, scored: Sequence[int] | None = None) -> list[np.ndarray]:
    """One CNN per scored fold, trained on the other folds; features of all images from each.

    ``scored`` lists the folds to score (default: every fold); the hold-out split scores
    fold 0 (the test set) with one CNN trained on the training part.
    """
    import torch

    threads = torch.get_num_threads()
    det = torch.are_deterministic_algorithms_enabled()
    torch.set_num_threads(1)  # one thread: reductions in a fixed order, identical reruns
    torch.use_deterministic_algorithms(True)
    try:
        small = _block_mean(images, 64)
        out = []
        for i, k in enumerate(range(int(folds.max()) + 1) if scored is None else scored):
            tick(f"probes: training CNN for fold {k}")
            out.append(_cnn_fold_features(small, y, folds != k, seed=seeds[i], epochs=epochs))
        return out
    finally:
        torch.set_num_threads(threads)
        torch.use_deterministic_algorithms(det)
