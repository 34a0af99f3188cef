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


@pytest.fixture(scope="module")
def small_run(nih_root, nih_readers, monkeypatch_module):
    seen = []
    real = probes._cnn_fold_features

    def spy(images64, targets, train, **kw):
        seen.append(train.copy())
        return real(images64, targets, train, **kw)

    monkeypatch_module.setattr(probes, "_cnn_fold_features", spy)
    ids = sorted(nih_readers.table["item_id"].unique())[::7]  # 116 images
    kw = dict(root=nih_root, findings=("Abnormal", "Effusion"), extractors=("pixels", "cnn"),
              n_splits=3, rng=11, cnn_epochs=2, image_ids=ids)
    first = probes.nih_probe_scores(nih_readers.table, **kw)
    second = probes.nih_probe_scores(nih_readers.table, **kw)
    return first, second, seen, ids


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
