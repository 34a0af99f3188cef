"""CPU smoke runs of the supervised ResNet-50 (M0.12) and exclusion retraining (M0.13) on real
Kermany images (64 px, 24 source + 12 evaluation images, 1-2 epochs, one thread).

Witnesses: the ids the DataLoader actually yields (callback events) against the split;
hand counts of the exclusion (Table 19 columns) and of pos_weight; an uninterrupted run
as the reference for an interrupted-and-resumed one (byte-identical files); the original
model of an exclusion run as the same-seed twin of a run without exclusion; sklearn's
roc_auc_score on the pandas seed mean for the audit's retained comparison.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from sklearn.metrics import roc_auc_score

from medaudit.audit.spec import AuditSpec
from medaudit.cli.main import main
from medaudit.exceptions import MedauditError
from medaudit.io.schema import validate_score_table
from medaudit.train import SupervisedSpec, retrain_excluding, stratified_split, train_supervised

REPO = Path(__file__).resolve().parents[2]
KERMANY = REPO / ".." / "shared" / "data" / "kermany_pediatric_pneumonia_test224"
SEED_KEY = ("model", "prompt", "cohort", "image_id", "seed")


class Interrupt(Exception):
    """Injected failure after an epoch (a killed job)."""


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    if not (KERMANY / "labels.csv").exists():
        pytest.skip(f"real Kermany images absent at {KERMANY} (shared data not mounted)")
    d = tmp_path_factory.mktemp("kermany")
    lab = pd.read_csv(KERMANY / "labels.csv").sort_values("path")
    src = pd.concat([lab[lab.pneumonia == c].head(12) for c in (0, 1)])
    ev = pd.concat([lab[lab.pneumonia == c].iloc[12:18] for c in (0, 1)])
    for name, f in (("source", src), ("eval", ev)):  # manifests point at the shared files
        pd.DataFrame({"image_id": f["path"], "path": [str(KERMANY / p) for p in f["path"]],
                      "label": f["pneumonia"], "class": f["class"]}).to_csv(d / f"{name}.csv",
                                                                             index=False)
    sel = stratified_split(src["path"], src["class"], rng=2026)
    ids = src["path"].to_numpy()
    opt_ids, sel_ids = sorted(ids[~sel]), sorted(ids[sel])
    excluded = {"kermany_src": [opt_ids[0], opt_ids[-1], sel_ids[0]], "kermany_eval": [ev["path"].iat[0]]}
    pd.DataFrame([{"dataset": k, "image_id": i, "path": "", "reason": "phash pair"}
                  for k, v in excluded.items() for i in v]).to_csv(d / "exclusion.csv", index=False)
    yield {"dir": d, "opt": set(opt_ids), "sel": set(sel_ids), "excluded": excluded,
           "eval": set(ev["path"]), "labels": dict(zip(lab["path"], lab["pneumonia"], strict=True))}
    shutil.rmtree(d, ignore_errors=True)  # checkpoints are large


def _spec(d: Path, **kw) -> SupervisedSpec:
    base = {"source": {"cohort": "kermany_src", "manifest": str(d / "source.csv"),
                       "stratify_column": "class"},
            "evaluation": [{"cohort": "kermany_eval", "manifest": str(d / "eval.csv")}],
            "image_size": 64, "seeds": [1], "max_epochs": 2, "batch_size": 10,
            "eval_batch_size": 32, "num_threads": 1}
    base.update(kw)
    return SupervisedSpec.model_validate(base)


class Recorder:
    def __init__(self, stop_after: int | None = None):
        self.events, self.stop_after = [], stop_after

    def __call__(self, e):
        self.events.append(e)
        if e.kind == "epoch_end" and self.stop_after == e.epoch:
            raise Interrupt(f"killed after epoch {e.epoch}")


@pytest.fixture(scope="module")
def run_excl(data):
    """Original + retrained, two seeds, one epoch each."""
    rec = Recorder()
    spec = _spec(data["dir"], seeds=[1, 2], max_epochs=1)
    res = retrain_excluding(spec, data["dir"] / "exclusion.csv", out=data["dir"] / "excl",
                            callback=rec)
    return res, rec


@pytest.fixture(scope="module")
def run_plain(data):
    """No exclusion, seed 1, two epochs, uninterrupted (the reference run)."""
    rec = Recorder()
    return train_supervised(_spec(data["dir"]), out=data["dir"] / "plain", callback=rec), rec


# the 3-image retained selection cohort has one positive: the audit's per-seed DeLong on it
# is undefined and says so (UndefinedMetricWarning); that cohort is not what this test checks
@pytest.mark.slow
@pytest.mark.filterwarnings("ignore::medaudit.exceptions.UndefinedMetricWarning")
def test_scoretable_is_consumed_by_the_audit(data, run_excl):
    from medaudit.audit.run import audit

    res, _ = run_excl
    out = res.out
    table = validate_score_table(pd.read_csv(out / "scores.csv"), key=SEED_KEY)
    assert set(table.columns) >= {"image_id", "cohort", "model", "prompt", "score", "label", "seed"}
    assert set(table["prompt"]) == {"none"} and set(table["seed"]) == {1, 2}
    assert set(table["model"]) == {"resnet50_original", "resnet50_retrained"}
    assert all(table["label"] == table["image_id"].map(data["labels"]))  # labels never flipped
    doc = yaml.safe_load((out / "audit.yaml").read_text())
    doc["n_resamples"] = 20
    outcome = audit(AuditSpec.model_validate(doc), out)
    comp = outcome.results["retained"].tables["comparisons"]
    row = comp[comp["cohort"] == "kermany_eval"].iloc[0]
    assert (row["model_a"], row["model_b"]) == ("resnet50_original", "resnet50_retrained")
    assert (row["n_retained"], row["n_only_a"], row["n_only_b"]) == (11, 1, 0)
    assert row["seed_delta_n_seeds"] == 2
    ev = table[(table.cohort == "kermany_eval") & ~table.image_id.isin(data["excluded"]["kermany_eval"])]
    ens = ev.groupby(["model", "image_id"])[["score", "label"]].mean()
    for m, col in (("resnet50_original", "auroc_a"), ("resnet50_retrained", "auroc_b")):
        g = ens.loc[m]
        assert row[col] == pytest.approx(roc_auc_score(g["label"], g["score"]), abs=1e-12)


def test_no_selection_image_is_ever_optimised(data, run_excl, run_plain):
    for _res, rec in (run_excl, run_plain):
        per_epoch: dict = {}
        for e in rec.events:
            if e.kind == "batch":
                per_epoch.setdefault((e.model, e.seed, e.epoch), []).extend(e.image_ids)
        assert per_epoch
        for (model, _, _), ids in per_epoch.items():
            want = set(data["opt"])
            if model.endswith("retrained"):
                want -= set(data["excluded"]["kermany_src"])
            assert not set(ids) & data["sel"]
            assert sorted(ids) == sorted(want)  # each epoch yields every optimisation image once
    split = pd.read_csv(run_plain[0].out / "split.csv")
    assert set(split.loc[split.role == "selection", "image_id"]) == data["sel"]
    per_class = split.groupby(["stratum", "role"]).size().unstack()
    assert per_class.loc["NORMAL"].to_dict() == {"optimisation": 10, "selection": 2}  # 12 -> 2.4 -> 2


def test_seed_controls_the_run(run_excl, run_plain):
    res, _ = run_excl
    s = res.scores[res.scores.model == "resnet50_original"]
    a = s[s.seed == 1].sort_values(["cohort", "image_id"])["score"].to_numpy()
    b = s[s.seed == 2].sort_values(["cohort", "image_id"])["score"].to_numpy()
    assert not np.array_equal(a, b)  # a different seed gives a different model
    # same seed, same split: epoch 1 of the plain run equals epoch 1 of the original model
    h1 = res.history[(res.history.model == "resnet50_original") & (res.history.seed == 1)]
    h2 = run_plain[0].history[run_plain[0].history.epoch == 1]
    cols = ["train_loss", "selection_auroc", "selection_bce", "pos_weight"]
    assert h1[cols].to_numpy().tolist() == h2[cols].to_numpy().tolist()


def test_resume_after_interruption_is_identical(data, run_plain):
    out = data["dir"] / "resumed"
    rec = Recorder(stop_after=1)
    with pytest.raises(Interrupt):
        train_supervised(_spec(data["dir"]), out=out, callback=rec)
    ck = out / "runs" / "resnet50" / "seed-1"
    assert (ck / "last.pt").exists() and not (ck / "done.json").exists()
    assert len(pd.read_csv(ck / "history.csv")) == 1
    with pytest.raises(FileExistsError, match="--resume"):
        train_supervised(_spec(data["dir"]), out=out)
    with pytest.raises(MedauditError, match="changed"):
        train_supervised(_spec(data["dir"], lr=2e-4), out=out, resume=True)
    rec2 = Recorder()
    res = train_supervised(_spec(data["dir"]), out=out, resume=True, callback=rec2)
    assert [e.epoch for e in rec2.events if e.kind == "epoch_start"] == [2]
    ref = run_plain[0].out
    for name in ("scores.csv", "history.csv", "split.csv", "model_cards.json", "audit.yaml"):
        assert (out / name).read_bytes() == (ref / name).read_bytes(), name
    pd.testing.assert_frame_equal(res.scores, run_plain[0].scores)


def test_exclusion_keeps_roles_and_counts(data, run_excl):
    res, _ = run_excl
    split = pd.read_csv(res.out / "split.csv")
    excl = data["excluded"]
    assert set(split.loc[split.excluded, "image_id"]) == set(excl["kermany_src"])
    t19 = res.exclusion.set_index("cohort")
    assert t19.loc["kermany_src", ["original", "excluded", "retained"]].tolist() == [24, 3, 21]
    assert t19.loc["kermany_eval", ["original", "excluded", "retained"]].tolist() == [12, 1, 11]
    cols = ["original", "excluded", "retained"]
    assert t19.loc["kermany_src optimisation", cols].tolist() == [20, 2, 18]  # by hand
    assert t19.loc["kermany_src selection", cols].tolist() == [4, 1, 3]
    assert (t19["positives_retained"] + t19["negatives_retained"] == t19["retained"]).all()
    assert "." not in (res.out / "exclusion.csv").read_text()  # integer counts
    sc = res.scores
    re_ = sc[sc.model == "resnet50_retrained"]
    assert not set(re_["image_id"]) & {i for v in excl.values() for i in v}
    assert set(re_.loc[re_.cohort == "kermany_src_selection", "image_id"]) == data["sel"] - set(
        excl["kermany_src"])
    og = sc[sc.model == "resnet50_original"]
    assert set(og.loc[og.cohort == "kermany_eval", "image_id"]) == data["eval"]
    # pos_weight by hand: original 10 neg / 10 pos; retrained drops opt_ids[0] and [-1]
    lab = data["labels"]
    kept = sorted(data["opt"])[1:-1]
    want = sum(lab[i] == 0 for i in kept) / sum(lab[i] == 1 for i in kept)
    pw = res.history.groupby("model")["pos_weight"].first()
    assert pw["resnet50_original"] == 1.0 and pw["resnet50_retrained"] == pytest.approx(want)
    cards = {c.name: c for c in res.cards}
    assert "random initialisation" in cards["resnet50_retrained"].checkpoint
    assert "autocast off" in cards["resnet50_original"].score_rule
    assert cards["resnet50_original"].exposure == {
        "kermany_src_selection": "used for early stopping and checkpoint selection"}


def test_cli_trains_and_refuses_to_overwrite(data, tmp_path, capsys):
    spec = _spec(data["dir"], max_epochs=1, seeds=[5]).model_dump(mode="json")
    spec["source"]["max_per_label"] = 6
    p = tmp_path / "spec.yaml"
    p.write_text(yaml.safe_dump(spec))
    out = tmp_path / "run"
    assert main(["train", "supervised", str(p), "--out", str(out)]) == 0
    assert "scores.csv" in capsys.readouterr().out
    assert main(["train", "supervised", str(p), "--out", str(out), "--quiet"]) == 2
    assert "--resume" in capsys.readouterr().err
    before = (out / "scores.csv").read_bytes()
    assert main(["train", "supervised", str(p), "--out", str(out), "--resume"]) == 0
    assert "reusing" in capsys.readouterr().err
    assert (out / "scores.csv").read_bytes() == before
    assert not list(out.rglob("last.pt"))  # finished seeds keep only best.pt


def test_a_refused_resume_names_the_keys_that_changed(tmp_path):
    """Probe finding: `--resume` after changing max_epochs said only "differs in ['spec']"."""
    import json

    from medaudit.train import supervised

    identity = {"spec": {"max_epochs": 2, "seeds": [1], "source": {"cohort": "s"}},
                "base_dir": "/d", "inputs": {"a.csv": "x"}}
    (tmp_path / "run_spec.json").write_text(json.dumps(identity))
    supervised._prepare_out(tmp_path, identity, resume=True)  # unchanged: resumes
    changed = {**identity, "spec": {**identity["spec"], "max_epochs": 3},
               "inputs": {"a.csv": "y"}}
    with pytest.raises(MedauditError, match=r"differs in \['inputs\.a\.csv', 'spec\.max_epochs'\]"):
        supervised._prepare_out(tmp_path, changed, resume=True)
