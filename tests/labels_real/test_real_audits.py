"""End-to-end audits on the real data through ``medaudit.audit.run.audit`` (small B).

The example specs are loaded, pointed at tables built into ``tmp_path`` and run.
Witnesses: hard labels recomputed here in exact rational arithmetic from the raw ratings
and each group's declared scale (normalised mean > 1/2, ties negative), scikit-learn AUROC
and AP on those labels, scikit-learn on the duplicated data set for the tie-aware soft
AUROC (ENHANCE scores tie heavily), a brute-force double sum for the strict soft
AUROC (M1.2), scipy's Pearson R^2 across models, and scipy's binomial test.
"""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from sklearn.metrics import average_precision_score, roc_auc_score

from medaudit.adapters.probes import nih_probe_scores
from medaudit.audit.run import audit
from medaudit.audit.spec import AuditSpec, load_spec
from medaudit.datasets.annotations import read_nih_readers, write_tables

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
B = 40


def _soft_auroc_brute(score: np.ndarray, p: np.ndarray) -> float:
    # strict s-AUROC (the default, paper 001 Table 4): pairs (j, i) with j strictly before i
    # in the stable descending order, weighted p_j (1 - p_i), over n+ n-
    order = np.argsort(-score, kind="stable")
    s_p = p[order]
    upper = np.triu(np.ones((len(p), len(p))), k=1)  # j < i
    num = (s_p[:, None] * (1 - s_p)[None, :] * upper).sum()
    return float(num / (p.sum() * (1 - p).sum()))


def _spec(name: str, folder: Path, annotations: Path | None = None, **update):
    raw = load_spec(EXAMPLES / name)[0].model_dump()
    raw["annotations"]["path"] = str(annotations or folder / "annotations.csv")
    raw["label_uncertainty"]["n_resamples"] = B
    raw.update(scores=str(folder / "scores.csv"), n_resamples=B, **update)
    return AuditSpec.model_validate(raw)


@pytest.fixture(scope="module")
def enhance_run(enhance_root, tmp_path_factory):
    out = tmp_path_factory.mktemp("enh") / "tables"
    write_tables("enhance", out, root=enhance_root)
    # the example reads the annotations straight from the data folder (format: enhance)
    spec = _spec("enhance_abc.yaml", out, annotations=enhance_root)
    assert spec.annotations.format == "enhance" and spec.label_uncertainty.soft_ties == "grouped"
    return audit(spec, out), out


def _exact_labels(table: pd.DataFrame, cohort: str) -> tuple[pd.Series, pd.Series]:
    """Soft label and strict-majority hard label per item, in exact rational arithmetic from
    the raw ratings and each group's declared scale: (raw - min) / (max - min), mean > 1/2."""
    t = table[table["cohort"] == cohort]
    norm = [Fraction(str(r)) - Fraction(str(lo)) for r, lo in zip(t["rating_raw"], t["scale_min"],
                                                                   strict=True)]
    norm = [n / (Fraction(str(hi)) - Fraction(str(lo)))
            for n, lo, hi in zip(norm, t["scale_min"], t["scale_max"], strict=True)]
    exact = pd.Series(norm, index=t["item_id"].to_numpy()).groupby(level=0).agg(
        lambda v: sum(v, Fraction(0)) / len(v))
    return exact.astype(float), exact.map(lambda m: int(m > Fraction(1, 2)))


def _auroc_duplicated(score: np.ndarray, p: np.ndarray) -> float:
    # tie-aware (grouped) soft AUROC = scikit-learn's AUROC on the data set duplicated into a
    # positive copy of weight p and a negative copy of weight 1 - p (M1.2, anchors T9)
    return float(roc_auc_score(np.r_[np.ones(p.size), np.zeros(p.size)], np.r_[score, score],
                               sample_weight=np.r_[p, 1 - p]))


def _auroc_duplicated_strict(score: np.ndarray, p: np.ndarray) -> float:
    # the duplicated data set pairs each item's two copies at a tie (one half of p (1 - p));
    # the strict form (the default) leaves that self pair out
    return _auroc_duplicated(score, p) - 0.5 * float(np.sum(p * (1 - p))) / (
        float(p.sum()) * float((1 - p).sum()))


def test_enhance_audit_matches_independent_labels(enhance_run, enhance_students):
    outcome, folder = enhance_run
    res = outcome.results["label_uncertainty"]
    scores = pd.read_csv(folder / "scores.csv")
    m = res.tables["metrics"]
    for cohort in ("asymmetry", "border", "color"):
        soft, hard = _exact_labels(enhance_students.table, cohort)
        scored = sorted(set(scores.loc[scores["cohort"] == cohort, "image_id"]))
        soft, hard = soft.loc[scored], hard.loc[scored]
        sub = m[m["cohort"] == cohort]
        assert (sub.loc[sub["criterion"] == "roc_auc", "n_pos"] == hard.sum()).all()
        for model, g in scores[scores["cohort"] == cohort].groupby("model"):
            s = g.set_index("image_id").loc[soft.index, "score"].to_numpy()
            row = sub[(sub["model"] == model)].set_index("criterion")["estimate"]
            assert row["roc_auc"] == pytest.approx(roc_auc_score(hard, s), abs=1e-12)
            assert row["average_precision[ties=pooled]"] == pytest.approx(
                average_precision_score(hard, s), abs=1e-12)
            assert row["soft_roc_auc[ties=grouped]"] == pytest.approx(
                _auroc_duplicated_strict(s, soft.to_numpy()), abs=1e-10)
        # Figure 1 R^2 across the four models, against scipy
        ag = res.tables["agreement"]
        x = sub[sub["criterion"] == "roc_auc"].sort_values("model")["estimate"]
        y = sub[sub["criterion"] == "soft_roc_auc[ties=grouped]"].sort_values("model")["estimate"]
        r2 = ag[(ag["cohort"] == cohort) & (ag["criterion"] == "soft_roc_auc[ties=grouped]")]["r2"]
        assert r2.iloc[0] == pytest.approx(stats.pearsonr(x, y).statistic ** 2, abs=1e-12)
    st = res.tables["stability_test"]
    assert len(st) == 6
    for r in st.itertuples():
        assert r.pvalue == pytest.approx(stats.binomtest(int(r.k), int(r.n), 0.5,
                                                         alternative="greater").pvalue)
    ann = outcome.provenance["inputs"]["annotations"]
    assert ann["format"] == "enhance" and ann["attach"]["n_unscored_items_ignored"] == 3 * 18


def test_enhance_exact_ties(enhance_run, enhance_students):
    from medaudit.stats.annotation_bootstrap import labels_from_sums

    exact, _ = _exact_labels(enhance_students.table, "color")
    t = enhance_students.table
    g = t[t["cohort"] == "color"].groupby("item_id")["rating"]
    tie = (exact == 0.5).loc[g.sum().index].to_numpy()
    _, hard = labels_from_sums(g.sum().to_numpy(), g.size().to_numpy(), tie="exclude")
    # every exact tie (and nothing else) is a tie for the label rule, despite float sums
    assert tie.sum() > 0 and (np.isnan(hard) == tie).all()


def test_enhance_audit_is_deterministic(enhance_run):
    outcome, folder = enhance_run
    again = audit(outcome.spec, folder)
    for name, df in outcome.results["label_uncertainty"].tables.items():
        pd.testing.assert_frame_equal(df, again.results["label_uncertainty"].tables[name])


def test_nih_audit_on_probe_scores(nih_root, tmp_path):
    readers = read_nih_readers(nih_root)
    ids = sorted(readers.table["item_id"].unique())[::6]  # 135 images
    findings = ("Abnormal", "Effusion")
    res = nih_probe_scores(readers.table, root=nih_root, findings=findings,
                           extractors=("pixels", "hog"), n_splits=3, rng=5, image_ids=ids)
    res.scores.to_csv(tmp_path / "scores.csv", index=False)
    readers.core().to_csv(tmp_path / "annotations.csv", index=False)
    spec = _spec("nih_readers.yaml", tmp_path, annotations=nih_root,
                 cohorts={f: {} for f in findings})
    assert spec.annotations.format == "nih"
    outcome = audit(spec, tmp_path)
    m = outcome.results["label_uncertainty"].tables["metrics"]
    t = readers.table
    for f in findings:
        frac = t[(t["cohort"] == f) & t["item_id"].isin(ids)].groupby("item_id")["rating"].mean()
        hard = (frac > 0.5).astype(int)  # 3 of 5 readers
        for model in ("probe_hog", "probe_pixels"):
            s = res.scores[(res.scores["cohort"] == f) & (res.scores["model"] == model)]
            s = s.set_index("image_id").loc[frac.index, "score"]
            row = m[(m["cohort"] == f) & (m["model"] == model)].set_index("criterion")["estimate"]
            assert row["roc_auc"] == pytest.approx(roc_auc_score(hard, s), abs=1e-12)
            assert row["soft_roc_auc"] == pytest.approx(
                _soft_auroc_brute(s.to_numpy(), frac.to_numpy()), abs=1e-10)
    d = outcome.results["discrimination"].tables["metrics"]
    assert set(d["cohort"]) == set(findings)


def test_enhance_example_reads_scores_and_annotations_in_place(enhance_root, tmp_path):
    """The shipped example needs no build step: `scores: dataset:enhance:...` and
    `format: enhance` read the shared data folder directly (nothing copied)."""
    raw = load_spec(EXAMPLES / "enhance_abc.yaml")[0].model_dump()
    assert str(raw["scores"]).startswith("dataset:enhance:")
    raw["scores"] = f"dataset:enhance:{enhance_root}"
    raw["annotations"]["path"] = str(enhance_root)
    raw["label_uncertainty"]["n_resamples"] = 20
    raw.update(n_resamples=20, blocks=["discrimination"])
    outcome = audit(AuditSpec.model_validate(raw), EXAMPLES)
    m = outcome.results["discrimination"].tables["metrics"]
    assert {"roc_auc", "soft_roc_auc"} <= set(m["criterion"])
    # 351 scored images without a student rating are dropped and counted, not silently lost
    assert outcome.provenance["inputs"]["annotations"]["attach"]
    # witness: the AUROC of one model on the attached hard labels, by scikit-learn
    t = outcome.results["discrimination"].tables["metrics"]
    row = t[(t["criterion"] == "roc_auc") & (t["cohort"] == "color")].iloc[0]
    from medaudit.audit.context import build_context

    ctx = build_context(AuditSpec.model_validate(raw), EXAMPLES).context
    g = ctx.scores[(ctx.scores["cohort"] == "color") & (ctx.scores["model"] == row["model"])]
    assert row["estimate"] == pytest.approx(roc_auc_score(g["label"], g["score"]), abs=1e-12)
