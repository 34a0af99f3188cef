"""The spec-driven path: load_annotations, attach_labels and a whole `medaudit audit` run.

Witnesses: hashlib for the file digest; hand-aggregated labels of a small synthetic
study written to tmp_path; scikit-learn and the double-sum soft oracles for the numbers
the audit reports; byte-identical outputs on a rerun.
"""

from __future__ import annotations

import hashlib

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import average_precision_score, roc_auc_score

from medaudit.audit.run import audit, write_outcome
from medaudit.audit.spec import AuditSpec
from medaudit.exceptions import SchemaError
from medaudit.labels import attach_labels, load_annotations
from medaudit.labels.spec import AnnotationsSpec
from tests import _oracles as oracle


def _study(tmp_path, n=40, n_readers=4, seed=0, label_column=False):
    """Binary votes of `n_readers` on n images and three models' scores (cohort c1)."""
    rng = np.random.default_rng(seed)
    p = rng.beta(0.6, 0.6, n)
    votes = (rng.random((n, n_readers)) < p[:, None]).astype(int)
    ann = pd.DataFrame([{"item_id": f"im{i:02d}", "annotator": f"r{a}", "rating": votes[i, a]}
                        for i in range(n) for a in range(n_readers)])
    ann.to_csv(tmp_path / "ann.csv", index=False)
    rows = []
    for m, noise in (("mA", 0.5), ("mB", 1.0), ("mC", 2.0)):
        s = 1 / (1 + np.exp(-(4 * (p - 0.5) + rng.normal(0, noise, n))))
        rows += [{"image_id": f"im{i:02d}", "cohort": "c1", "model": m, "prompt": "none",
                  "score": s[i]} for i in range(n)]
    scores = pd.DataFrame(rows)
    if label_column:
        scores["label"] = np.nan
    scores.to_csv(tmp_path / "scores.csv", index=False)
    soft = votes.mean(axis=1)
    hard = (soft > 0.5).astype(int)  # strict majority: 2 of 4 is negative
    return scores, soft, hard


def _spec(**over):
    base = {"name": "labels", "scores": "scores.csv", "cohorts": {"c1": {}}, "n_resamples": 60,
            "blocks": ["discrimination", "label_uncertainty"], "annotations": {"path": "ann.csv"},
            "label_uncertainty": {"n_resamples": 50}}
    base.update(over)
    return AuditSpec.model_validate(base)


def test_load_annotations_provenance(tmp_path):
    _study(tmp_path)
    frame, prov = load_annotations(AnnotationsSpec(path="ann.csv"), tmp_path)
    assert prov["sha256"] == hashlib.sha256((tmp_path / "ann.csv").read_bytes()).hexdigest()
    assert (prov["n_ratings"], prov["n_items"], prov["n_annotators"]) == (160, 40, 4)
    assert prov["aggregation"]["n_items_labelled"] == 40 and prov["rules"]["hard"] == "majority"
    assert len(frame) == 160


def test_attach_adds_soft_and_hard_labels_by_hand(tmp_path):
    scores, soft, hard = _study(tmp_path, label_column=True)  # an all-empty label column
    frame, _ = load_annotations(AnnotationsSpec(path="ann.csv"), tmp_path)
    out = attach_labels(scores, frame, AnnotationsSpec(path="ann.csv"), source="scores.csv")
    one = out[out["model"] == "mA"].set_index("image_id")
    ids = [f"im{i:02d}" for i in range(40)]
    np.testing.assert_allclose(one.loc[ids, "label_soft"], soft, rtol=1e-15)
    assert one.loc[ids, "label"].tolist() == hard.tolist()
    assert out.attrs["labels"]["label_source"] == "annotations (hard rule)"


def test_table_label_is_kept_and_disagreements_counted(tmp_path):
    scores, _, hard = _study(tmp_path)
    scores["label"] = np.tile(1 - hard, 3)  # the opposite of the annotation label everywhere
    frame, _ = load_annotations(AnnotationsSpec(path="ann.csv"), tmp_path)
    out = attach_labels(scores, frame, AnnotationsSpec(path="ann.csv"), source="s")
    assert (out["label"].to_numpy() == 1 - np.tile(hard, 3)).all()
    assert out.attrs["labels"]["n_label_disagreements"] == 120


def test_unannotated_and_unscored_items_are_listed(tmp_path):
    scores, _, _ = _study(tmp_path)
    frame, _ = load_annotations(AnnotationsSpec(path="ann.csv"), tmp_path)
    spec = AnnotationsSpec(path="ann.csv")
    short = frame[~frame["item_id"].isin(["im03", "im07"])]
    with pytest.raises(SchemaError, match=r"2 of 40 scored item\(s\) have no usable.*im03, im07"):
        attach_labels(scores, short, spec, source="s.csv")
    dropped = attach_labels(scores, short, AnnotationsSpec(path="ann.csv", unannotated="drop"),
                            source="s.csv")
    assert dropped.attrs["labels"]["n_score_rows_dropped"] == 6 and len(dropped) == 114
    few = scores[scores["image_id"] != "im05"]
    with pytest.raises(SchemaError, match=r"1 annotated item\(s\) have no scores.*im05"):
        attach_labels(few, frame, spec, source="s.csv")
    ok = attach_labels(few, frame, AnnotationsSpec(path="ann.csv", unscored="ignore"), source="s")
    assert ok.attrs["labels"]["n_unscored_items_ignored"] == 1


def test_dropped_items_say_why(tmp_path):
    scores, _, _ = _study(tmp_path, n_readers=4)
    frame, _ = load_annotations(AnnotationsSpec(path="ann.csv", tie="exclude"), tmp_path)
    with pytest.raises(SchemaError, match=r"tie \(tie: exclude\)"):
        attach_labels(scores, frame, AnnotationsSpec(path="ann.csv", tie="exclude"), source="s")


def test_cohort_join(tmp_path):
    scores, _, _ = _study(tmp_path)
    frame, _ = load_annotations(AnnotationsSpec(path="ann.csv", cohort="c1"), tmp_path)
    out = attach_labels(scores, frame, AnnotationsSpec(path="ann.csv", cohort="c1"), source="s")
    assert out.attrs["labels"]["join"] == "(cohort, image_id)"
    other = scores.assign(cohort="c2")
    with pytest.raises(SchemaError, match=r"c2 / im00"):
        attach_labels(other, frame, AnnotationsSpec(path="ann.csv", cohort="c1"), source="s")


def test_existing_soft_labels_conflict(tmp_path):
    scores, _, _ = _study(tmp_path)
    frame, _ = load_annotations(AnnotationsSpec(path="ann.csv"), tmp_path)
    with pytest.raises(SchemaError, match="already has label_soft"):
        attach_labels(scores.assign(label_soft=0.5), frame, AnnotationsSpec(path="ann.csv"),
                      source="s")


def test_bad_rating_in_the_file_names_the_file_and_row(tmp_path):
    _study(tmp_path)
    ann = pd.read_csv(tmp_path / "ann.csv")
    ann.loc[17, "rating"] = 2
    ann.to_csv(tmp_path / "ann.csv", index=False)
    with pytest.raises(SchemaError, match=r"ann\.csv: column 'rating'.*at line 19 "):
        load_annotations(AnnotationsSpec(path="ann.csv"), tmp_path)


@pytest.fixture(scope="module")
def audited(tmp_path_factory):
    d = tmp_path_factory.mktemp("audit")
    _, soft, hard = _study(d)
    return d, soft, hard, audit(_spec(), d)


def test_spec_driven_audit_reports_the_hand_aggregated_metrics(audited):
    d, soft, hard, out = audited
    scores = pd.read_csv(d / "scores.csv")
    lu = out.results["label_uncertainty"].tables["metrics"]
    disc = out.results["discrimination"].tables["metrics"]
    for m in ("mA", "mB", "mC"):
        s = scores[scores["model"] == m].sort_values("image_id")["score"].to_numpy()
        want = {"roc_auc": roc_auc_score(hard, s),
                "average_precision[ties=pooled]": average_precision_score(hard, s),
                "soft_roc_auc": oracle.soft_auroc_strict(soft, s),
                "soft_average_precision": oracle.soft_ap_known_self(soft, s)}
        for crit, v in want.items():
            row = lu[(lu["model"] == m) & (lu["criterion"] == crit)].iloc[0]
            assert row["estimate"] == pytest.approx(v, rel=1e-12)
        for crit in ("soft_roc_auc", "soft_average_precision"):
            row = disc[(disc["model"] == m) & (disc["criterion"] == crit)].iloc[0]
            assert row["estimate"] == pytest.approx(want[crit], rel=1e-12)
    assert out.provenance["inputs"]["annotations"]["n_items"] == 40
    tables = out.results["label_uncertainty"].tables
    assert set(tables) == {"metrics", "annotation_intervals", "rank_changes", "agreement",
                           "stability", "stability_test"}
    assert (tables["stability"]["n_resamples"] == 50).all()


def test_spec_driven_audit_writes_identical_outputs_twice(audited, tmp_path):
    d, _, _, first = audited
    a = write_outcome(first, tmp_path / "a")
    b = write_outcome(audit(_spec(), d), tmp_path / "b")
    for name in ("results.json", "tables/label_uncertainty__stability_test.csv",
                 "tables/discrimination__metrics.csv"):
        assert (a / name).read_bytes() == (b / name).read_bytes(), name


def test_default_blocks_include_label_uncertainty_with_annotations():
    spec = AuditSpec.model_validate({"name": "x", "scores": "s.csv", "cohorts": {"c1": {}},
                                     "annotations": {"path": "a.csv"}})
    assert "label_uncertainty" in spec.blocks
    assert spec.label_uncertainty.n_resamples == 1000


def test_the_order_of_the_annotation_rows_changes_nothing(audited, tmp_path):
    """Probe finding: the same annotations shuffled gave other annotation intervals and
    stability tests for the same seed; they are put in one order (item, annotator) as read."""
    d, _, _, first = audited
    import shutil

    shuffled = tmp_path / "shuffled"
    shutil.copytree(d, shuffled)
    ann = pd.read_csv(shuffled / "ann.csv")
    ann.sample(frac=1.0, random_state=5).to_csv(shuffled / "ann.csv", index=False)
    again = audit(_spec(), shuffled)
    for name, t in first.results["label_uncertainty"].tables.items():
        pd.testing.assert_frame_equal(t, again.results["label_uncertainty"].tables[name],
                                      check_exact=True, obj=name)


def test_undeclared_hedged_ratings_name_the_file_and_the_spec_key(tmp_path):
    pd.DataFrame({"item_id": ["a", "a", "b", "b"], "annotator": ["r1", "r2", "r1", "r2"],
                  "rating": ["YES", "HEDGE", "NO", "NO"]}).to_csv(tmp_path / "ann.csv", index=False)
    spec = AnnotationsSpec.model_validate({"path": "ann.csv", "scale": {"codes": {
        "YES": 1, "NO": 0, "HEDGE": "hedge"}}})
    with pytest.raises(SchemaError) as e:
        load_annotations(spec, tmp_path)
    msg = str(e.value)
    assert msg.startswith("ann.csv: 1 rating(s) are hedged") and "`annotations.hedge:`" in msg
    assert "item 'a' by annotator 'r2'" in msg and "hedge=" not in msg


def test_a_soft_label_differing_between_an_images_rows_is_refused():
    """Probe finding: one model's row with another label_soft than the others was ignored
    (the first row's was used for every model)."""
    from medaudit.io.schema import validate_score_table

    t = pd.DataFrame({"image_id": ["i1", "i1", "i2", "i2"], "cohort": "c", "model": ["a", "b", "a", "b"],
                      "prompt": "p", "score": [0.2, 0.3, 0.7, 0.8], "label": [0, 0, 1, 1],
                      "label_soft": [0.2, 0.2, 0.6, 1.0]})
    with pytest.raises(SchemaError, match=r"image 'i2' in cohort 'c' has different \['label_soft'\]"):
        validate_score_table(t, source="t")


def test_a_cohort_whose_images_the_drop_removes_is_named_for_that(tmp_path):
    # probe finding: all of site2's images unannotated and `unannotated: drop` gave "the audit
    # spec names ... unknown cohort 'site2'", though the spec named no cohort
    import medaudit
    from medaudit.exceptions import MedauditError

    rows = [{"image_id": f"{c}-{i}", "cohort": c, "model": m, "score": (i % 7) / 7 + 0.01 * j}
            for c in ("site1", "site2") for i in range(12) for j, m in enumerate(("a", "b"))]
    ann = pd.DataFrame([{"item_id": f"site1-{i}", "annotator": r, "rating": int((i + k) % 3 == 0)}
                        for i in range(12) for k, r in enumerate(("r1", "r2", "r3"))])
    ann.to_csv(tmp_path / "ann.csv", index=False)
    with pytest.raises(MedauditError, match=r"cohort\(s\) \['site2'\] of the score table have no "
                                            r"annotated image, and `annotations.unannotated: "
                                            r"drop` removed all their rows"):
        medaudit.audit(pd.DataFrame(rows), n_resamples=20, blocks=["discrimination"],
                       annotations={"path": str(tmp_path / "ann.csv"), "unannotated": "drop"})
