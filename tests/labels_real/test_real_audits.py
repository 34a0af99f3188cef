"""End-to-end audits on the real data through ``medaudit.audit.run.audit`` (small B).

The example specs are loaded, pointed at tables built into ``tmp_path`` and run.
Witnesses: hard labels recomputed here from the annotation table (normalised mean > 0.5),
scikit-learn AUROC on those labels, a brute-force double sum for the inclusive soft
AUROC (M1.2), scipy's Pearson R^2 across models, and scipy's binomial test.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from sklearn.metrics import roc_auc_score

from medaudit.audit.run import audit
from medaudit.io.spec import AuditSpec, load_spec
from medaudit.labels.datasets import read_nih_readers, write_tables
from medaudit.labels.probes import nih_probe_scores

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
B = 40


def _soft_auroc_brute(score: np.ndarray, p: np.ndarray) -> float:
    # inclusive s-AUROC (M1.2 first line): pairs (j, i) with j at or before i in the stable
    # descending order, weighted p_j (1 - p_i), over n+ n-
    order = np.argsort(-score, kind="stable")
    s_p = p[order]
    upper = np.triu(np.ones((len(p), len(p))))  # j <= i
    num = (s_p[:, None] * (1 - s_p)[None, :] * upper).sum()
    return float(num / (p.sum() * (1 - p).sum()))


def _spec(name: str, folder: Path, **update):
    raw = load_spec(EXAMPLES / name)[0].model_dump()
    raw["annotations"]["path"] = str(folder / "annotations.csv")
    raw["label_uncertainty"]["n_resamples"] = B
    raw.update(scores=str(folder / "scores.csv"), n_resamples=B, **update)
    return AuditSpec.model_validate(raw)


@pytest.fixture(scope="module")
def enhance_run(enhance_root, tmp_path_factory):
    out = tmp_path_factory.mktemp("enh") / "tables"
    write_tables("enhance", out, root=enhance_root)
    spec = _spec("enhance_abc.yaml", out)
    return audit(spec, out), out


def test_enhance_audit_matches_independent_labels(enhance_run):
    outcome, folder = enhance_run
    res = outcome.results["label_uncertainty"]
    ann = pd.read_csv(folder / "annotations.csv")
    scores = pd.read_csv(folder / "scores.csv")
    m = res.tables["metrics"]
    for cohort in ("asymmetry", "border", "color"):
        soft = ann[ann["cohort"] == cohort].groupby("item_id")["rating"].mean()
        # a mean of exactly one half is a tie (negative).  Normalised ENHANCE ratings (0.2,
        # 1/3, ...) make float sums miss some exact ties (see test_enhance_exact_ties), so
        # the labels are compared away from the tie: strict positives <= n_pos <= + ties
        near = (soft - 0.5).abs() < 1e-9
        hard = (soft > 0.5 + 1e-9).astype(int)
        sub = m[m["cohort"] == cohort]
        n_pos = sub["n_pos"][sub["criterion"] == "roc_auc"]
        assert (n_pos >= hard.sum()).all() and (n_pos <= hard.sum() + near.sum()).all()
        if not near.any():
            assert (n_pos == hard.sum()).all()
        for model, g in scores[scores["cohort"] == cohort].groupby("model"):
            g = g.set_index("image_id").loc[soft.index]
            row = sub[(sub["model"] == model)].set_index("criterion")["estimate"]
            if not near.any():
                assert row["roc_auc"] == pytest.approx(roc_auc_score(hard, g["score"]), abs=1e-12)
            assert row["soft_roc_auc"] == pytest.approx(
                _soft_auroc_brute(g["score"].to_numpy(), soft.to_numpy()), abs=1e-10)
        # Figure 1 R^2 across the four models, against scipy
        ag = res.tables["agreement"]
        for o, s_ in (("roc_auc", "soft_roc_auc"),):
            x = sub[sub["criterion"] == o].sort_values("model")["estimate"]
            y = sub[sub["criterion"] == s_].sort_values("model")["estimate"]
            r2 = ag[(ag["cohort"] == cohort) & (ag["criterion"] == s_)]["r2"].iloc[0]
            assert r2 == pytest.approx(stats.pearsonr(x, y).statistic ** 2, abs=1e-12)
    st = res.tables["stability_test"]
    for r in st.itertuples():
        assert r.pvalue == pytest.approx(stats.binomtest(int(r.k), int(r.n), 0.5,
                                                         alternative="greater").pvalue)


def test_enhance_exact_ties(enhance_run):
    from medaudit.stats.annotation_bootstrap import labels_from_sums

    _, folder = enhance_run
    ann = pd.read_csv(folder / "annotations.csv")
    g = ann[ann["cohort"] == "color"].groupby("item_id")["rating"]
    near = ((g.mean() - 0.5).abs() < 1e-9).to_numpy()
    _, hard = labels_from_sums(g.sum().to_numpy(), g.size().to_numpy(), tie="exclude")
    assert near.sum() > 0 and np.isnan(hard[near]).all()


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
    spec = _spec("nih_readers.yaml", tmp_path, cohorts={f: {} for f in findings})
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
