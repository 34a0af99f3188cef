"""Offline NIH probes: out of fold, grouped by patient, deterministic.

Witnesses: a planted probe whose only information is each item's own one-hot column (a
model that saw an item would score it by its label; out of fold every item of a fold
gets the intercept alone, i.e. one common score); the fold table checked against the
patient ids of the NIH metadata file; the CNN's training masks recorded and compared
with the folds; two runs compared byte for byte.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from medaudit.adapters import probes
from medaudit.exceptions import MedauditError


def test_oof_probe_never_sees_the_item_it_scores():
    n = 60
    rng = np.random.default_rng(3)
    y = np.tile([0, 1], n // 2)
    folds = rng.permutation(np.repeat(np.arange(3), n // 3))
    s = probes.oof_probe(np.eye(n), y, folds)
    for k in range(3):
        # only unseen columns differ between the items of fold k: one common score
        assert np.ptp(s[folds == k]) < 1e-12
    # in-sample the same probe separates the labels: leakage would be visible
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import roc_auc_score

    fit = LogisticRegression(C=0.05, max_iter=5000).fit(np.eye(n), y)
    assert roc_auc_score(y, fit.predict_proba(np.eye(n))[:, 1]) == 1.0


def test_oof_probe_refuses_a_one_class_training_fold():
    with pytest.raises(MedauditError, match="one class only"):
        probes.oof_probe(np.eye(4), np.array([1, 1, 0, 0]), np.array([0, 0, 1, 1]))


def test_folds_group_patients(nih_root, nih_readers):
    t = nih_readers.table
    lab = probes.majority_labels(t[t["cohort"] == "Abnormal"]).set_index("item_id")
    meta = pd.read_csv(nih_root / "nih_Data_Entry_2017_v2020_subset_810.csv").set_index("Image Index")
    patient = meta.loc[lab.index, "Patient ID"].to_numpy()
    folds = probes.make_folds(lab["label"].to_numpy(), patient, n_splits=5, rng=7)
    assert sorted(np.unique(folds)) == [0, 1, 2, 3, 4]
    per_patient = pd.Series(folds).groupby(patient).nunique()
    assert (per_patient == 1).all()  # no patient in two folds
    again = probes.make_folds(lab["label"].to_numpy(), patient, n_splits=5, rng=7)
    np.testing.assert_array_equal(folds, again)


def _spied_runs(nih_root, nih_readers, monkeypatch, **kw):
    """Two identical runs on 116 images; the CNN's training masks recorded by a spy."""
    seen = []
    real = probes._cnn_fold_features

    def spy(images64, targets, train, **kw):
        seen.append(train.copy())
        return real(images64, targets, train, **kw)

    monkeypatch.setattr(probes, "_cnn_fold_features", spy)
    ids = sorted(nih_readers.table["item_id"].unique())[::7]  # 116 images
    kw = dict(root=nih_root, findings=("Abnormal", "Effusion"), extractors=("pixels", "cnn"),
              rng=11, cnn_epochs=2, image_ids=ids, **kw)
    first = probes.nih_probe_scores(nih_readers.table, **kw)
    second = probes.nih_probe_scores(nih_readers.table, **kw)
    monkeypatch.setattr(probes, "_cnn_fold_features", real)
    return first, second, seen, ids


@pytest.fixture(scope="module")
def small_run(nih_root, nih_readers, monkeypatch_module):
    return _spied_runs(nih_root, nih_readers, monkeypatch_module, n_splits=3)


@pytest.fixture(scope="module")
def monkeypatch_module():
    mp = pytest.MonkeyPatch()
    yield mp
    mp.undo()


def test_probe_scores_are_out_of_fold_and_complete(small_run):
    res, _, seen, ids = small_run
    s = res.scores
    assert set(s["model"]) == {"probe_pixels", "probe_cnn"}
    counts = s.groupby(["cohort", "model"])["image_id"].agg(["size", "nunique"])
    assert (counts["size"] == len(ids)).all() and (counts["nunique"] == len(ids)).all()
    assert s["score"].between(0, 1).all()
    fold = res.folds.set_index("image_id")["fold"]
    assert (s["split"] == "fold" + fold.loc[s["image_id"]].astype(str).to_numpy()).all()
    # one CNN per fold, trained on exactly the other folds' images
    folds = res.folds["fold"].to_numpy()
    assert len(seen) == 2 * 3  # two runs x three folds
    for k, train in enumerate(seen[:3]):
        np.testing.assert_array_equal(train, folds != k)


def test_probe_scores_are_deterministic(small_run):
    first, second, _, _ = small_run
    pd.testing.assert_frame_equal(first.scores, second.scores)
    assert first.settings["fold_seeds"] == second.settings["fold_seeds"]


# ----------------------------------------------------------------------------- M1.1 hold-out split
def test_holdout_split_is_sklearn_train_test_split_with_a_fixed_seed():
    from sklearn.model_selection import train_test_split

    y = np.random.default_rng(0).integers(0, 2, 200)
    test = probes.holdout_split(y, rng=5)
    seed = int(np.random.default_rng(5).integers(2**31 - 1))  # the one random_state drawn
    _, want = train_test_split(np.arange(200), test_size=0.3, stratify=y, random_state=seed)
    np.testing.assert_array_equal(np.flatnonzero(test), np.sort(want))
    assert test.sum() == 60  # 30 % of 200
    # stratified: each class's test share within one item of 30 %
    for c in (0, 1):
        assert abs(test[y == c].sum() - 0.3 * (y == c).sum()) <= 1
    np.testing.assert_array_equal(test, probes.holdout_split(y, rng=5))  # fixed seed, fixed split
    assert (test != probes.holdout_split(y, rng=6)).any()
    plain = probes.holdout_split(y, rng=5, stratify=False)
    _, want = train_test_split(np.arange(200), test_size=0.3, random_state=seed)
    np.testing.assert_array_equal(np.flatnonzero(plain), np.sort(want))


def test_holdout_split_keeps_groups_whole():
    g = np.random.default_rng(1)
    groups = g.integers(0, 80, 300)
    y = (g.random(300) < 0.3).astype(int)
    test = probes.holdout_split(y, groups, rng=2)
    per_group = pd.Series(test).groupby(groups).nunique()
    assert (per_group == 1).all()  # no patient on both sides
    n_groups = np.unique(groups).size
    test_groups = np.unique(groups[test])
    assert test_groups.size == int(np.ceil(0.3 * n_groups))  # sklearn rounds the test part up
    label = pd.Series(y).groupby(groups).max()
    assert abs(label.loc[test_groups].sum() - 0.3 * label.sum()) <= 1  # stratified on max(y)


def test_holdout_split_errors():
    with pytest.raises(MedauditError, match="stratify=False"):
        probes.holdout_split(np.array([0, 0, 0, 1]), rng=0)
    with pytest.raises(MedauditError, match="test_size"):
        probes.holdout_split(np.tile([0, 1], 5), test_size=1.5)
    with pytest.raises(MedauditError, match="shape"):
        probes.holdout_split(np.tile([0, 1], 5), np.arange(4))


def test_holdout_probe_never_sees_a_test_item():
    n = 40
    y = np.tile([0, 1], n // 2)
    test = probes.holdout_split(y, rng=3)
    s = probes.holdout_probe(np.eye(n), y, test)
    assert np.isnan(s[~test]).all()
    assert np.ptp(s[test]) < 1e-12  # only unseen columns differ: one common score


@pytest.fixture(scope="module")
def holdout_run(nih_root, nih_readers, monkeypatch_module):
    first, second, seen, _ = _spied_runs(nih_root, nih_readers, monkeypatch_module, split="holdout")
    return first, second, seen


def test_holdout_scores_only_the_test_images(holdout_run):
    res, again, seen = holdout_run
    folds = res.folds
    assert list(folds.columns) == ["image_id", "patient_id", "split"]
    test_ids = set(folds.loc[folds["split"] == "test", "image_id"])
    s = res.scores
    assert set(s["split"]) == {"test"} and set(s["image_id"]) == test_ids
    assert s.groupby(["cohort", "model"]).size().eq(len(test_ids)).all()
    assert (folds.groupby("patient_id")["split"].nunique() == 1).all()
    n_pat = folds["patient_id"].nunique()
    assert folds.loc[folds["split"] == "test", "patient_id"].nunique() == int(np.ceil(0.3 * n_pat))
    # one CNN per run, trained on exactly the training images
    assert len(seen) == 2
    np.testing.assert_array_equal(seen[0], (folds["split"] == "train").to_numpy())
    assert res.settings["split"] == "holdout" and res.settings["n_test"] == len(test_ids)
    pd.testing.assert_frame_equal(res.scores, again.scores)
