"""The supervised ResNet-50 source model and the overlap-exclusion retraining (paper 000 M0.12-M0.13).

:func:`train_supervised` reads the source and evaluation manifests, splits the source
once (stratified 80/20 by original class, split seed recorded), trains every
optimisation seed on that split (weighted BCE with ``pos_weight = negatives /
positives``, AdamW, early stopping on selection AUROC), scores every evaluation cohort
with each seed's best-selection-AUROC checkpoint and writes a long ScoreTable (one row
per image x seed; ``medaudit audit`` forms the mean-probability seed ensemble) with a
model card per model.  When the spec names an exclusion list (the overlap screen's
output) it also retrains every seed without the implicated images, each retained image
keeping its original role, and scores only the retained targets, so the ``retained``
block compares ``<name>_original`` with ``<name>_retrained`` on identical targets.

Run directory (``out``)::

    run_spec.json          the resolved spec and input hashes (checked on --resume)
    split.csv              image_id, stratum, label, role, excluded
    exclusion.csv          Table 19 counts per cohort (with an exclusion list); the same
                           counts sit in the retrained model card's ``training`` entries
                           ``exclusion[<cohort>]``, so audit.yaml carries them to the audit
    runs/<model>/seed-<s>/ last.pt (model, optimiser, scheduler, RNG states), best.pt,
                           history.csv, predictions.csv, done.json
    scores.csv, scores.parquet, history.csv, model_cards.json, training.json, audit.yaml
    timings.csv            wall-clock per epoch (the only file that differs between runs)

Every file is written atomically (temporary file + rename).  A run interrupted after
epoch k resumes (``resume=True``) from ``last.pt`` with the model, optimiser,
scheduler, early-stopping and RNG states (torch, CUDA, numpy, python, DataLoader
generator) of epoch k, and gives results identical to an uninterrupted run.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from medaudit.exceptions import MedauditError, SchemaError
from medaudit.io.modelcard import ModelCard, exclusion_card_entries
from medaudit.io.output import file_sha256, write_json
from medaudit.stats import roc_auc
from medaudit.train import _engine as eng
from medaudit.train.data import apply_exclusion, load_exclusion, load_manifest, pos_weight, stratified_split
from medaudit.train.spec import SupervisedSpec

__all__ = ["TrainEvent", "TrainingResult", "EarlyStopping", "train_supervised",
           "retrain_excluding", "ensemble_mean"]

ROLES = ("optimisation", "selection")


@dataclass(frozen=True)
class TrainEvent:
    """Progress of a training run, passed to ``callback`` (``kind``: seed_start, epoch_start,
    batch, epoch_end, seed_end, seed_reused)."""

    kind: str
    model: str
    seed: int
    epoch: int = 0
    max_epochs: int = 0
    batch: int = 0
    n_batches: int = 0
    image_ids: tuple[str, ...] = ()
    metrics: dict[str, Any] = field(default_factory=dict)


class EarlyStopping:
    """Keep the best selection AUROC; stop after ``patience`` epochs without a strict improvement.

    Ties keep the earlier epoch (the earlier checkpoint is never replaced by an equal one).

    >>> es = EarlyStopping(patience=2)
    >>> [es.update(e, v) for e, v in enumerate([0.7, 0.8, 0.8, 0.79], start=1)], es.stop
    ([True, True, False, False], True)
    >>> es.best_epoch, es.best
    (2, 0.8)
    """

    def __init__(self, patience: int):
        if patience < 1:
            raise MedauditError(f"patience must be at least 1; got {patience!r}.")
        self.patience, self.best, self.best_epoch, self.bad_epochs = patience, -np.inf, 0, 0

    def update(self, epoch: int, value: float) -> bool:
        """Record ``value`` for ``epoch``; return whether it is a new best (NaN never is)."""
        if value > self.best:
            self.best, self.best_epoch, self.bad_epochs = float(value), int(epoch), 0
            return True
        self.bad_epochs += 1
        return False

    @property
    def stop(self) -> bool:
        return self.bad_epochs >= self.patience

    def state_dict(self) -> dict[str, Any]:
        return {"patience": self.patience, "best": self.best, "best_epoch": self.best_epoch,
                "bad_epochs": self.bad_epochs}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.patience, self.best = int(state["patience"]), float(state["best"])
        self.best_epoch, self.bad_epochs = int(state["best_epoch"]), int(state["bad_epochs"])


@dataclass(frozen=True)
class TrainingResult:
    """What a run produced (also written under ``out``).

    ``scores`` is the long ScoreTable (``image_id, cohort, model, prompt, score, label,
    seed`` [+ ``negative_group``]); ``history`` one row per model x seed x epoch;
    ``split`` the source split; ``exclusion`` Table 19's counts (None without exclusion).
    """

    scores: pd.DataFrame
    history: pd.DataFrame
    split: pd.DataFrame
    cards: tuple[ModelCard, ...]
    exclusion: pd.DataFrame | None
    out: Path
    provenance: dict[str, Any]

    def ensemble(self) -> pd.DataFrame:
        """The mean-probability seed ensemble of every model (no ``seed`` column)."""
        return ensemble_mean(self.scores)


def ensemble_mean(scores: pd.DataFrame) -> pd.DataFrame:
    """Unweighted mean of the seeds' sigmoid probabilities per model x cohort x image."""
    key = ["model", "prompt", "cohort", "image_id"]
    other = [c for c in scores.columns if c not in (*key, "score", "seed")]
    mean = scores.groupby(key, sort=True)["score"].mean()
    meta = scores.drop_duplicates(key).set_index(key)[other]
    return meta.join(mean).reset_index()[[*key, "score", *other]]


# ----------------------------------------------------------------------------- data plan
@dataclass(frozen=True)
class _Variant:
    model: str
    retrained: bool
    optimisation: pd.DataFrame
    selection: pd.DataFrame
    targets: dict[str, pd.DataFrame]  # cohort -> images scored by the best checkpoint


def _plan(spec: SupervisedSpec, base_dir: Path) -> tuple[list[_Variant], pd.DataFrame,
                                                          pd.DataFrame | None, dict[str, Any]]:
    src = load_manifest(spec.source, base_dir, stratify_column=spec.source.stratify_column)
    evals = [load_manifest(e, base_dir) for e in spec.evaluation]
    sel = stratified_split(src.frame["image_id"], src.frame["stratum"],
                           selection_fraction=spec.source.selection_fraction, rng=spec.split_seed)
    split = src.frame[["image_id", "dataset", "stratum", "label"]].copy()
    split["role"] = np.where(sel, "selection", "optimisation")
    inputs: dict[str, Any] = {"source": src.to_dict(), "evaluation": [e.to_dict() for e in evals]}
    for d in (inputs["source"], *inputs["evaluation"]):
        d["sha256"] = file_sha256(d["file"])

    def variant(model: str, retrained: bool, excl: pd.DataFrame | None) -> tuple[_Variant, list]:
        frames = {"source": src.frame.assign(role=split["role"].to_numpy())}
        frames.update({e.frame["cohort"].iat[0]: e.frame for e in evals})
        counts = []
        if excl is not None:
            for name, f in list(frames.items()):
                frames[name], c = apply_exclusion(f, excl)
                counts.append({"cohort": spec.source.cohort if name == "source" else name, **c})
        s = frames.pop("source")
        opt = s[s["role"] == "optimisation"].reset_index(drop=True)
        selc = s[s["role"] == "selection"].reset_index(drop=True)
        for what, f in (("optimisation", opt), ("selection", selc)):
            if f["label"].nunique() < 2:
                raise SchemaError(f"model {model!r}: the {what} subset of source cohort "
                                  f"{spec.source.cohort!r} has {int(f['label'].sum())} positive(s) "
                                  f"of {len(f)}; it needs positives and negatives.")
        if excl is not None:  # the retained roles (M0.13: 5,151 optimisation, 1,283 selection)
            for role, f in (("optimisation", opt), ("selection", selc)):
                n0 = int((split["role"] == role).sum())
                counts.append({"cohort": f"{spec.source.cohort} {role}", "original": n0,
                               "excluded": n0 - len(f), "retained": len(f),
                               "positives_retained": int(f["label"].sum()),
                               "negatives_retained": int((f["label"] == 0).sum())})
        targets = dict(frames)
        if spec.source.score_selection:
            targets = {spec.selection_cohort: selc.assign(cohort=spec.selection_cohort), **targets}
        return _Variant(model, retrained, opt, selc, targets), counts

    variants = [variant(spec.model_name(retrained=False), False, None)[0]]
    table19 = None
    if spec.exclusion is not None:
        path = Path(spec.exclusion)
        path = path if path.is_absolute() else base_dir / path
        excl = load_exclusion(path)
        v, counts = variant(spec.model_name(retrained=True), True, excl)
        variants.append(v)
        table19 = pd.DataFrame(counts)
        known = pd.concat([src.frame, *[e.frame for e in evals]])[["dataset", "image_id"]]
        matched = pd.MultiIndex.from_frame(excl[["dataset", "image_id"]]).isin(
            pd.MultiIndex.from_frame(known))
        inputs["exclusion"] = {"file": str(path), "sha256": file_sha256(path),
                               "images_listed": int(len(excl)), "matched": int(matched.sum()),
                               "not_in_these_cohorts": int((~matched).sum()),
                               "pos_weight": "recomputed on the retained optimisation subset "
                                             "(M0.15 ambiguity 8)"}
        split["excluded"] = pd.MultiIndex.from_frame(split[["dataset", "image_id"]]).isin(
            pd.MultiIndex.from_frame(excl[["dataset", "image_id"]]))
    return variants, split, table19, inputs


# ----------------------------------------------------------------------------- run directory
def _run_identity(spec: SupervisedSpec, base_dir: Path, inputs: dict[str, Any]) -> dict[str, Any]:
    return {"spec": spec.model_dump(mode="json"), "base_dir": str(base_dir.resolve()),
            "inputs": inputs}


def _changed_keys(old: Any, new: Any, prefix: str = "") -> list[str]:
    """The dotted keys whose values differ between two JSON objects ("spec.max_epochs"),
    so that a refused --resume names what changed, not only "spec"."""
    if not (isinstance(old, dict) and isinstance(new, dict)):
        return [prefix or "(the whole record)"] if old != new else []
    out: list[str] = []
    for k in sorted(set(old) | set(new), key=str):
        out += _changed_keys(old.get(k), new.get(k), f"{prefix}.{k}" if prefix else str(k))
    return out


def _prepare_out(out: Path, identity: dict[str, Any], resume: bool) -> None:
    marker = out / "run_spec.json"
    if resume:
        if not marker.exists():
            raise MedauditError(f"--resume: {str(out)!r} holds no run to resume (no run_spec.json); "
                                "start a new run without --resume.")
        old = json.loads(marker.read_text(encoding="utf-8"))
        new = json.loads(json.dumps(identity))
        diff = _changed_keys(old, new)
        if diff:
            raise MedauditError(f"--resume: the spec or its inputs changed since {str(out)!r} was "
                                f"started (differs in {diff}); resume with the same spec and "
                                "data, or start a new run in another directory.")
        return
    if out.exists() and any(out.iterdir()):
        raise FileExistsError(f"output directory {str(out)!r} exists and is not empty; pass "
                              "--resume to continue its run, or choose another --out.")
    out.mkdir(parents=True, exist_ok=True)
    eng.atomic_write(marker, lambda p: write_json(p, identity))


# ----------------------------------------------------------------------------- one seed
def _train_seed(spec: SupervisedSpec, v: _Variant, seed: int, seed_dir: Path, env: eng.Env,
                callback: Callable[[TrainEvent], None]) -> tuple[pd.DataFrame, pd.DataFrame, dict]:
    """Train one optimisation seed (or resume it); return predictions, history and timings."""
    import torch

    done = seed_dir / "done.json"
    if done.exists():
        callback(TrainEvent("seed_reused", v.model, seed))
        preds = pd.read_csv(seed_dir / "predictions.csv", dtype={"image_id": str},
                            keep_default_na=False)
        hist = pd.read_csv(seed_dir / "history.csv")
        return preds, hist, json.loads(done.read_text(encoding="utf-8"))
    seed_dir.mkdir(parents=True, exist_ok=True)
    callback(TrainEvent("seed_start", v.model, seed, max_epochs=spec.max_epochs))
    pw = pos_weight(v.optimisation["label"].to_numpy())
    with eng.torch_session(seed, env):
        model = eng.build_model(env.initial_state)
        model = eng.to_device(model, env)
        opt = torch.optim.AdamW(model.parameters(), lr=spec.lr, weight_decay=spec.weight_decay)
        sched = eng.make_scheduler(opt, spec.scheduler, spec.max_epochs)
        gen = torch.Generator()
        gen.manual_seed(int(seed))
        train_loader = eng.train_loader(v.optimisation, spec, gen)
        loss_fn = torch.nn.BCEWithLogitsLoss(
            pos_weight=torch.tensor([pw], dtype=torch.float32, device=env.device))
        stopper = EarlyStopping(spec.patience)
        history: list[dict[str, Any]] = []
        timings: list[dict[str, Any]] = []
        start = 1
        last = seed_dir / "last.pt"
        if last.exists():  # resume from the last completed epoch
            ck = torch.load(last, map_location="cpu", weights_only=False)
            model.load_state_dict(ck["model"])
            opt.load_state_dict(ck["optimizer"])
            sched.load_state_dict(ck["scheduler"])
            stopper.load_state_dict(ck["early_stopping"])
            history, timings = list(ck["history"]), list(ck["timings"])
            eng.set_rng_state(ck["rng"], gen)
            start = int(ck["epoch"]) + 1
        y_sel = v.selection["label"].to_numpy(dtype=np.float64)
        ids_opt = v.optimisation["image_id"].to_numpy(dtype=object)
        for epoch in range(start, spec.max_epochs + 1):
            if stopper.stop:
                break
            n_batches = len(train_loader)
            callback(TrainEvent("epoch_start", v.model, seed, epoch, spec.max_epochs,
                                n_batches=n_batches))
            t0 = time.perf_counter()
            model.train()
            loss_sum, n_seen = 0.0, 0
            for b, (x, y, idx) in enumerate(train_loader, start=1):
                x, y = eng.move(x, env), y.to(env.device).unsqueeze(1)
                opt.zero_grad(set_to_none=True)
                loss = loss_fn(eng.forward(model, x, env), y)
                loss.backward()
                opt.step()
                loss_sum += float(loss.detach()) * len(idx)
                n_seen += len(idx)
                callback(TrainEvent("batch", v.model, seed, epoch, spec.max_epochs, b, n_batches,
                                    tuple(ids_opt[idx.numpy()])))
            lr = float(opt.param_groups[0]["lr"])
            sched.step()
            t1 = time.perf_counter()
            s_sel = eng.predict(model, v.selection, spec, env)
            auroc = roc_auc(y_sel, s_sel)
            improved = stopper.update(epoch, auroc)
            if improved:
                eng.atomic_torch_save(seed_dir / "best.pt", eng.cpu_state(model))
            t2 = time.perf_counter()
            history.append({"model": v.model, "seed": int(seed), "epoch": epoch,
                            "train_loss": loss_sum / n_seen, "selection_auroc": auroc,
                            "selection_bce": eng.bce(y_sel, s_sel), "lr": lr,
                            "improved": bool(improved), "best_epoch": stopper.best_epoch,
                            "best_selection_auroc": stopper.best, "pos_weight": pw,
                            "n_optimisation": n_seen, "n_selection": int(y_sel.size)})
            timings.append({"model": v.model, "seed": int(seed), "epoch": epoch,
                            "train_seconds": t1 - t0, "selection_seconds": t2 - t1,
                            "train_images_per_second": n_seen / max(t1 - t0, 1e-12)})
            eng.atomic_write(seed_dir / "history.csv",
                             lambda p: pd.DataFrame(history).to_csv(p, index=False,
                                                                    float_format="%.17g"))
            eng.atomic_torch_save(last, {
                "epoch": epoch, "model": eng.cpu_state(model), "optimizer": opt.state_dict(),
                "scheduler": sched.state_dict(), "early_stopping": stopper.state_dict(),
                "history": history, "timings": timings, "rng": eng.get_rng_state(gen)})
            callback(TrainEvent("epoch_end", v.model, seed, epoch, spec.max_epochs,
                                n_batches=n_batches, metrics=dict(history[-1])))
        # score every target with the best-selection-AUROC checkpoint
        model.load_state_dict(torch.load(seed_dir / "best.pt", map_location="cpu",
                                         weights_only=True))
        frames = []
        for cohort, f in v.targets.items():
            s = eng.predict(model, f, spec, env)
            cols = {"image_id": f["image_id"].to_numpy(), "cohort": cohort, "score": s,
                    "label": f["label"].to_numpy()}
            if "negative_group" in f.columns:
                cols["negative_group"] = f["negative_group"].to_numpy()
            frames.append(pd.DataFrame(cols))
    preds = pd.concat(frames, ignore_index=True)
    eng.atomic_write(seed_dir / "predictions.csv",
                     lambda p: preds.to_csv(p, index=False, float_format="%.17g"))
    info = {"best_epoch": stopper.best_epoch, "best_selection_auroc": stopper.best,
            "epochs_run": len(history), "stopped_early": bool(stopper.stop),
            "pos_weight": pw, "timings": timings}
    eng.atomic_write(done, lambda p: write_json(p, info))
    if not spec.keep_last_checkpoint and last.exists():
        last.unlink()
    callback(TrainEvent("seed_end", v.model, seed, metrics={k: info[k] for k in info
                                                            if k != "timings"}))
    preds = pd.read_csv(seed_dir / "predictions.csv", dtype={"image_id": str}, keep_default_na=False)
    return preds, pd.DataFrame(history), info


# ----------------------------------------------------------------------------- whole run
def _card(spec: SupervisedSpec, model: str, env: eng.Env,
          exclusion: pd.DataFrame | None = None) -> ModelCard:
    size, resize = spec.image_size, spec.resize
    training = {"initial_weights": env.initial_weights["description"],
                "device": env.device_name, "autocast": env.autocast_note,
                "deterministic_algorithms": env.deterministic_note,
                "torch_threads": str(env.threads), "split_seed": str(spec.split_seed),
                "seeds": ",".join(str(s) for s in spec.seeds)}
    if exclusion is not None:
        # Table 19 travels with the retrained model into audit.yaml: the audit reads the
        # source cohort's and the roles' counts (never scored) from here (blocks.retained)
        training.update(exclusion_card_entries(exclusion))
    fields = dict(
        name=model,
        checkpoint=env.initial_weights["description"],
        processor=(f"train: RandomResizedCrop({size}, scale=(0.85, 1.00), ratio=(0.95, 1.05)) -> "
                   "RandomAffine(degrees=5, translate=(0.02, 0.02)) -> ColorJitter(brightness=0.10,"
                   f" contrast=0.10), no flips; eval: Resize({resize}) -> CenterCrop({size}); RGB, "
                   "ImageNet mean/std"),
        score_rule=("sigmoid of the one logit of each seed's best-selection-AUROC checkpoint; "
                    f"seeds {list(spec.seeds)} ensembled by mean probability; device "
                    f"{env.device_name}, autocast {env.autocast_note}"),
        library_versions=eng.versions(),
        exposure=({spec.selection_cohort: "used for early stopping and checkpoint selection"}
                  if spec.source.score_selection else {}))
    if "training" in ModelCard.model_fields:  # richer cards when the schema has the field
        fields["training"] = training
    return ModelCard(**fields)


def _audit_yaml(spec: SupervisedSpec, variants: list[_Variant], cards: list[ModelCard]) -> str:
    import yaml

    evals = [e.cohort for e in spec.evaluation]
    cohorts = {c: {"role": "primary", "design": "within_label"} for c in evals}
    if spec.source.score_selection:
        cohorts[spec.selection_cohort] = {"role": "source", "design": "within_label"}
    doc: dict[str, Any] = {
        "name": f"{spec.name}-supervised", "scores": "scores.csv", "primary_prompt": "none",
        "seed": 2026, "n_resamples": 2000, "cohorts": cohorts,
        "models": [c.model_dump(mode="json", exclude_defaults=True) for c in cards]}
    if len(variants) > 1:
        # original and retrained models score different image sets (full vs retained targets):
        # only the retained block pairs them (on the images both score)
        doc["blocks"] = ["retained"]
        doc["retained"] = [{"a": variants[0].model, "b": variants[1].model, "cohorts": evals}]
    else:
        doc["blocks"] = ["discrimination", "operating_points", "retained"]
    return ("# written by `medaudit train supervised`; run `medaudit audit audit.yaml --out DIR`\n"
            + yaml.safe_dump(doc, sort_keys=False))


def train_supervised(spec: SupervisedSpec, *, out: str | os.PathLike[str],
                     base_dir: str | os.PathLike[str] = ".", resume: bool = False,
                     callback: Callable[[TrainEvent], None] | None = None) -> TrainingResult:
    """Train (or resume) every model and seed the spec describes; write and return the results.

    Parameters
    ----------
    spec : SupervisedSpec
        Data, protocol and seeds (:func:`medaudit.train.spec.load_supervised_spec`).
    out : path
        Run directory; must be new or empty unless ``resume``.
    base_dir : path, default="."
        Folder that relative paths in the spec are resolved against (the spec's folder).
    resume : bool, default=False
        Continue the run in ``out`` from each seed's last completed epoch; the spec and
        its inputs must be unchanged.
    callback : callable, optional
        Receives a :class:`TrainEvent` at each seed, epoch and batch (progress, tests).

    Returns
    -------
    TrainingResult
    """
    base_dir, out = Path(base_dir), Path(out)
    callback = callback or (lambda event: None)
    variants, split, table19, inputs = _plan(spec, base_dir)
    env = eng.make_env(spec, base_dir)
    inputs["initial_weights"] = env.initial_weights
    _prepare_out(out, _run_identity(spec, base_dir, inputs), resume)
    eng.atomic_write(out / "split.csv", lambda p: split.to_csv(p, index=False))
    if table19 is not None:
        eng.atomic_write(out / "exclusion.csv", lambda p: table19.to_csv(p, index=False))
    scores, history, seed_info = [], [], {}
    for v in variants:
        for seed in spec.seeds:
            preds, hist, info = _train_seed(spec, v, seed, out / "runs" / v.model / f"seed-{seed}",
                                            env, callback)
            scores.append(preds.assign(model=v.model, prompt="none", seed=int(seed)))
            history.append(hist)
            seed_info[f"{v.model}/seed-{seed}"] = info
    cols = ["image_id", "cohort", "model", "prompt", "score", "label", "seed"]
    table = pd.concat(scores, ignore_index=True)
    table = table[cols + [c for c in table.columns if c not in cols]]
    if "negative_group" in table.columns:
        table["negative_group"] = table["negative_group"].fillna("").astype(str)
    hist = pd.concat(history, ignore_index=True)
    cards = [_card(spec, v.model, env, table19 if v.retrained else None) for v in variants]
    timings = pd.DataFrame([t for i in seed_info.values() for t in i["timings"]])
    provenance = {
        "protocol": "paper 000 M0.12 (supervised ResNet-50) / M0.13 (exclusion retraining)",
        "inputs": inputs, "device": env.device_name, "autocast": env.autocast_note,
        "deterministic_algorithms": env.deterministic_note, "torch_threads": env.threads,
        "versions": eng.versions(), "split_seed": spec.split_seed, "seeds": list(spec.seeds),
        "models": {v.model: {"retrained": v.retrained, "optimisation": len(v.optimisation),
                             "selection": len(v.selection),
                             "pos_weight": pos_weight(v.optimisation["label"].to_numpy()),
                             "targets": {c: len(f) for c, f in v.targets.items()}}
                   for v in variants},
        "seed_runs": {k: {kk: vv for kk, vv in i.items() if kk != "timings"}
                      for k, i in seed_info.items()},
        "split_rule": "per stratum (sorted), ids sorted then permuted by default_rng(split_seed); "
                      "selection = first floor(fraction*n + 1/2)",
        "ensemble": "unweighted mean of the seeds' sigmoid probabilities (medaudit audit)",
    }
    eng.atomic_write(out / "scores.csv", lambda p: table.to_csv(p, index=False, float_format="%.17g"))
    eng.atomic_write(out / "scores.parquet", lambda p: table.to_parquet(p, index=False))
    eng.atomic_write(out / "history.csv", lambda p: hist.to_csv(p, index=False, float_format="%.17g"))
    eng.atomic_write(out / "timings.csv", lambda p: timings.to_csv(p, index=False))
    eng.atomic_write(out / "model_cards.json",
                     lambda p: write_json(p, [c.model_dump(mode="json") for c in cards]))
    eng.atomic_write(out / "training.json", lambda p: write_json(p, provenance))
    text = _audit_yaml(spec, variants, cards)
    eng.atomic_write(out / "audit.yaml", lambda p: Path(p).write_text(text, encoding="utf-8"))
    return TrainingResult(scores=table, history=hist, split=split, cards=tuple(cards),
                          exclusion=table19, out=out, provenance=provenance)


def retrain_excluding(spec: SupervisedSpec, exclusion_csv: str | os.PathLike[str], *,
                      out: str | os.PathLike[str], base_dir: str | os.PathLike[str] = ".",
                      resume: bool = False,
                      callback: Callable[[TrainEvent], None] | None = None) -> TrainingResult:
    """Overlap-exclusion sensitivity (M0.13): the original model and the model retrained without
    every image the exclusion list implicates.

    The split is made on the full source, so each retained image keeps its original role;
    ``pos_weight`` is recomputed on the retained optimisation subset; every seed is
    retrained; the retrained model scores only the retained targets.  Models are named
    ``<name>_original`` and ``<name>_retrained`` (``audit.yaml`` pairs them in the
    ``retained`` block: Table 20).  Parameters as :func:`train_supervised`.
    """
    spec = spec.model_copy(update={"exclusion": str(Path(exclusion_csv).resolve())})
    return train_supervised(spec, out=out, base_dir=base_dir, resume=resume, callback=callback)
