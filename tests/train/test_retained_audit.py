"""Table 19 counts and the composition effect from a trainer run to the audit output and report.

The training itself is replaced by a deterministic stand-in (``_train_seed`` returns
hash-derived scores for the images it is asked to score), so this file checks the
wiring -- exclusion counts into the retrained model card and audit.yaml, the audit's
``retained.exclusion`` and ``retained.composition`` tables, the report -- in a few
seconds; real training is covered by test_supervised.py.

Witnesses: Table 19 counts by hand on a small synthetic exclusion (split sizes from the
rule floor(0.2 n + 1/2) per stratum); sklearn's roc_auc_score on the pandas seed mean over
the full and the retained targets.
"""

from __future__ import annotations

import zlib
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from PIL import Image
from sklearn.metrics import roc_auc_score

from medaudit.audit.run import audit, write_outcome
from medaudit.audit.spec import AuditSpec
from medaudit.train import SupervisedSpec, retrain_excluding, stratified_split, supervised

COLS = ["original", "excluded", "retained", "positives_retained", "negatives_retained"]
NCOLS = ["n_original", "n_excluded", "n_retained", "n_pos_retained", "n_neg_retained"]


def fake_train_seed(spec, v, seed, seed_dir, env, callback):
    """Scores every target image without training: label shift plus hash noise."""
    frames = []
    for cohort, f in v.targets.items():
        noise = np.array([zlib.crc32(f"{v.model}|{seed}|{i}".encode()) % 1000 / 1000
                          for i in f["image_id"]])
        frames.append(pd.DataFrame({"image_id": f["image_id"].to_numpy(), "cohort": cohort,
                                    "score": 0.7 * noise + 0.25 * f["label"].to_numpy(),
                                    "label": f["label"].to_numpy()}))
    hist = pd.DataFrame([{"model": v.model, "seed": int(seed), "epoch": 1,
                          "pos_weight": supervised.pos_weight(v.optimisation["label"].to_numpy())}])
    return pd.concat(frames, ignore_index=True), hist, {"timings": [], "best_epoch": 1}


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    d = tmp_path_factory.mktemp("synthetic")
    (d / "img").mkdir()
    # source: 10 TB, 10 healthy, 10 sick; evaluation: 4 TB, 6 non-TB
    src = pd.DataFrame({"image_id": [f"s{k:02d}" for k in range(30)],
                        "class": ["tb"] * 10 + ["healthy"] * 10 + ["sick"] * 10})
    src["label"] = (src["class"] == "tb").astype(int)
    ev = pd.DataFrame({"image_id": [f"e{k}" for k in range(10)], "label": [1] * 4 + [0] * 6})
    for name, f in (("source", src), ("eval", ev)):
        f = f.assign(path=[f"img/{i}.png" for i in f["image_id"]])
        for p in f["path"]:
            # tiny real images: the manifest check decodes each once (the stand-in trainer
            # below never reads them)
            Image.fromarray(np.zeros((8, 8), dtype=np.uint8)).save(d / p)
        f.to_csv(d / f"{name}.csv", index=False)
    sel = dict(zip(src["image_id"], stratified_split(src["image_id"], src["class"], rng=2026),
                   strict=True))
    pick = {c: sorted(src.loc[src["class"] == c, "image_id"]) for c in ("tb", "healthy", "sick")}
    opt_tb = next(i for i in pick["tb"] if not sel[i])
    sel_healthy = next(i for i in pick["healthy"] if sel[i])
    opt_sick = next(i for i in pick["sick"] if not sel[i])
    excl = [("src", opt_tb), ("src", sel_healthy), ("src", opt_sick), ("ev", "e0"), ("ev", "e7"),
            ("elsewhere", "x1")]  # x1 is in no cohort here: listed, not counted
    pd.DataFrame([{"dataset": a, "image_id": i, "path": "", "reason": "phash pair"}
                  for a, i in excl]).to_csv(d / "exclusion.csv", index=False)
    spec = SupervisedSpec.model_validate({
        "source": {"cohort": "src", "manifest": "source.csv", "stratify_column": "class"},
        "evaluation": [{"cohort": "ev", "manifest": "eval.csv"}], "image_size": 64,
        "seeds": [1, 2], "max_epochs": 1, "num_threads": 1})
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(supervised, "_train_seed", fake_train_seed)
        res = retrain_excluding(spec, d / "exclusion.csv", out=d / "run", base_dir=d)
    doc = yaml.safe_load((res.out / "audit.yaml").read_text())
    doc["n_resamples"] = 200
    outcome = audit(AuditSpec.model_validate(doc), res.out)
    return res, doc, outcome, d


def test_table19_by_hand_in_exclusion_csv_and_card(run):
    res, doc, _, _ = run
    t = pd.read_csv(res.out / "exclusion.csv").set_index("cohort")
    # by hand: selection = floor(0.2 n + 1/2) = 2 per stratum of 10, so 6 selection and 24
    # optimisation (8 TB); excluded: one optimisation TB, one selection healthy, one
    # optimisation sick
    assert t.loc["src", COLS].tolist() == [30, 3, 27, 9, 18]
    assert t.loc["src optimisation", COLS].tolist() == [24, 2, 22, 7, 15]
    assert t.loc["src selection", COLS].tolist() == [6, 1, 5, 2, 3]
    assert t.loc["ev", COLS].tolist() == [10, 2, 8, 3, 5]
    cards = {c["name"]: c for c in doc["models"]}
    training = cards["resnet50_retrained"]["training"]
    assert training["exclusion[src]"] == ("original=30, excluded=3, retained=27, "
                                          "positives_retained=9, negatives_retained=18")
    assert sum(k.startswith("exclusion[") for k in training) == 4
    assert not any(k.startswith("exclusion[") for k in cards["resnet50_original"].get("training", {}))


def test_audit_reports_table19(run):
    _, _, outcome, _ = run
    t19 = outcome.results["retained"].tables["exclusion"]
    assert t19["cohort"].tolist() == ["ev", "src", "src optimisation", "src selection"]
    assert t19["source"].tolist() == ["scores"] + ["model card"] * 3
    got = {r["cohort"]: [int(r[c]) for c in NCOLS] for r in t19.to_dict("records")}
    assert got == {"ev": [10, 2, 8, 3, 5], "src": [30, 3, 27, 9, 18],
                   "src optimisation": [24, 2, 22, 7, 15], "src selection": [6, 1, 5, 2, 3]}
    assert (t19["qualification"] == "").all()  # the card agrees with the score table on ev


def test_audit_reports_composition_effect(run):
    res, _, outcome, _ = run
    comp = outcome.results["retained"].tables["composition"]
    assert comp["cohort"].tolist() == ["ev"]
    r = comp.iloc[0]
    sc = res.scores
    og = sc[(sc.model == "resnet50_original") & (sc.cohort == "ev")]
    ens = og.groupby("image_id")[["score", "label"]].mean()
    kept = ens.drop(index=["e0", "e7"])
    assert r["model"] == "resnet50_original" and r["targets_from"] == "resnet50_retrained"
    assert r["auroc_all"] == pytest.approx(roc_auc_score(ens["label"], ens["score"]), abs=1e-12)
    assert r["auroc_retained"] == pytest.approx(roc_auc_score(kept["label"], kept["score"]),
                                                abs=1e-12)
    assert r["estimate"] == pytest.approx(r["auroc_retained"] - r["auroc_all"], abs=1e-12)
    assert (r["n"], r["n_retained"], r["n_excluded"]) == (10, 8, 2)
    assert r["ci_low"] <= r["estimate"] <= r["ci_high"]


def test_report_shows_the_new_tables(run):
    _, _, outcome, d = run
    out = write_outcome(outcome, d / "audit")
    html = (out / "report.html").read_text(encoding="utf-8")
    for name in ("composition", "exclusion"):
        assert (out / "tables" / f"retained__{name}.csv").exists()
        assert f"t-retained-{name}" in html and f"tables/retained__{name}.csv" in html
    assert "model card" in html and "src optimisation" in html
    t = pd.read_csv(out / "tables" / "retained__exclusion.csv")
    assert t["n_retained"].tolist() == [8, 27, 22, 5]


def test_listed_images_outside_the_cohorts_are_counted_not_used(run):
    res, _, _, d = run
    assert Path(res.provenance["inputs"]["exclusion"]["file"]) == (d / "exclusion.csv").resolve()
    assert res.provenance["inputs"]["exclusion"]["not_in_these_cohorts"] == 1
