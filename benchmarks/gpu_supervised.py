"""One short GPU run of the supervised ResNet-50 protocol shape (paper 000 M0.12-M0.13) on real images.

Protocol shape: 224-px crops (evaluation resize 256 -> centre crop 224), batch 64, AdamW
1e-4/1e-4, BF16 autocast, two optimisation seeds sharing one stratified 80/20 split, and
the overlap-exclusion retraining of both seeds -- but only ``--epochs`` (default 3) epochs,
so it measures epoch time and throughput, not accuracy.

Data (read from ``../shared/data``, never copied): a TB-vs-non-TB source built from the
600 TBX11K-train TB images (positives) and the 810 NIH ChestX-ray14 images (negatives);
evaluation on the 200 TBX11K-val TB images with the 234 Kermany normals as negatives.
Positives and negatives come from different datasets, so the AUROCs are confounded by the
source and mean nothing clinically; they are printed only as a sanity check.  The
exclusion list removes 10 source images and 4 evaluation images chosen by a fixed seed.

Run on the GPU machine from the repository root::

    .venv/bin/python benchmarks/gpu_supervised.py --out "$OUT/gpu_supervised"

It writes the run directory (scores, history, timings, cards; checkpoints deleted at the
end unless --keep-checkpoints) and ``summary.json`` with per-epoch seconds and images/s.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))  # a checkout without an installed medaudit


def _manifests(data: Path, work: Path) -> dict[str, Path]:
    data = data.resolve()  # the manifests hold absolute paths
    tbx = data / "tbx11k_tb_positive_subset"
    nih = data / "nih_cxr14_google_expert_readers"
    ker = data / "kermany_pediatric_pneumonia_test224"
    for d in (tbx, nih, ker):
        if not d.exists():
            raise SystemExit(f"missing shared data folder {d}")
    t = pd.read_csv(tbx / "labels.csv")
    n = pd.read_csv(nih / "images_256_manifest.csv")
    k = pd.read_csv(ker / "labels.csv")
    src = pd.concat([
        pd.DataFrame({"image_id": "tbx/" + t.loc[t.subset_split == "train", "image"],
                      "path": [str(tbx / "images_256" / i) for i in t.loc[t.subset_split == "train",
                                                                              "image"]],
                      "label": 1, "class": "tb", "dataset": "tbx11k"}),
        pd.DataFrame({"image_id": "nih/" + n["image_id"],
                      "path": [str(nih / "images_256" / i) for i in n["image_id"]],
                      "label": 0, "class": "nih", "dataset": "nih"})])
    k0 = k[k.pneumonia == 0]
    ev = pd.concat([
        pd.DataFrame({"image_id": "tbx/" + t.loc[t.subset_split == "val", "image"],
                      "path": [str(tbx / "images_256" / i) for i in t.loc[t.subset_split == "val",
                                                                              "image"]],
                      "label": 1, "dataset": "tbx11k"}),
        pd.DataFrame({"image_id": "kermany/" + k0["path"], "path": [str(ker / p) for p in k0["path"]],
                      "label": 0, "dataset": "kermany"})])
    work.mkdir(parents=True, exist_ok=True)
    src.to_csv(work / "source.csv", index=False)
    ev.to_csv(work / "eval.csv", index=False)
    rng = np.random.default_rng(2026)
    ex = pd.concat([src.iloc[rng.choice(len(src), 10, replace=False)],
                    ev.iloc[rng.choice(len(ev), 4, replace=False)]])
    ex.assign(reason="benchmark: random stand-in for overlap pairs")[
        ["dataset", "image_id", "path", "reason"]].to_csv(work / "exclusion.csv", index=False)
    return {"source": work / "source.csv", "eval": work / "eval.csv",
            "exclusion": work / "exclusion.csv"}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, help="new directory for the run and summary.json")
    ap.add_argument("--data", default=str(REPO / ".." / "shared" / "data"))
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--seeds", type=int, nargs="+", default=[2026, 2027])
    ap.add_argument("--workers", type=int, default=8)
    ap.add_argument("--keep-checkpoints", action="store_true")
    args = ap.parse_args(argv)

    import torch

    from medaudit.stats import roc_auc
    from medaudit.train import SupervisedSpec, retrain_excluding

    out = Path(args.out)
    files = _manifests(Path(args.data), out / "manifests")
    spec = SupervisedSpec.model_validate({
        "name": "resnet50",
        "source": {"cohort": "tb_vs_nih", "manifest": str(files["source"]),
                   "stratify_column": "class"},
        "evaluation": [{"cohort": "tbxval_vs_kermany", "manifest": str(files["eval"])}],
        "image_size": 224, "seeds": args.seeds, "max_epochs": args.epochs, "batch_size": 64,
        "eval_batch_size": 256, "num_workers": args.workers, "device": "auto"})
    epochs: list[dict] = []
    t_last = [time.perf_counter()]

    def progress(e):
        if e.kind == "epoch_end":
            print(f"{e.model} seed {e.seed} epoch {e.epoch}: selection AUROC "
                  f"{e.metrics['selection_auroc']:.4f}", flush=True)
        if e.kind in ("seed_start", "seed_end"):
            print(f"{e.kind} {e.model} seed {e.seed} (+{time.perf_counter() - t_last[0]:.1f} s)",
                  flush=True)
            t_last[0] = time.perf_counter()

    t0 = time.perf_counter()
    res = retrain_excluding(spec, files["exclusion"], out=out / "run", callback=progress)
    wall = time.perf_counter() - t0
    tim = pd.read_csv(out / "run" / "timings.csv")
    for r in tim.to_dict("records"):
        epochs.append({k: (float(v) if isinstance(v, (float, np.floating)) else v)
                       for k, v in r.items()})
    ens = res.ensemble()
    aurocs = {f"{m}/{c}": roc_auc(g["label"].to_numpy(float), g["score"].to_numpy())
              for (m, c), g in ens.groupby(["model", "cohort"])}
    first = tim[tim.epoch == 1]["train_seconds"]
    later = tim[tim.epoch > 1]
    summary = {
        "device": res.provenance["device"], "autocast": res.provenance["autocast"],
        "deterministic": res.provenance["deterministic_algorithms"],
        "versions": res.provenance["versions"], "cuda": torch.version.cuda,
        "models": res.provenance["models"], "seeds": args.seeds, "epochs": args.epochs,
        "batch_size": 64, "image_size": 224, "num_workers": args.workers,
        "total_wall_seconds": wall,
        "epoch1_train_seconds_mean": float(first.mean()),
        "later_epochs_train_seconds_mean": float(later["train_seconds"].mean())
        if len(later) else None,
        "later_epochs_train_images_per_second_mean":
            float(later["train_images_per_second"].mean()) if len(later) else None,
        "selection_seconds_mean": float(tim["selection_seconds"].mean()),
        "ensemble_auroc_sanity_only": aurocs,
        "per_epoch": epochs,
        "note": "AUROCs are confounded by dataset of origin (positives and negatives come from "
                "different datasets); this run measures time, not accuracy.",
    }
    (out / "summary.json").write_text(json.dumps(summary, indent=2, sort_keys=True) + "\n")
    if not args.keep_checkpoints:
        for p in (out / "run" / "runs").rglob("*.pt"):
            p.unlink()
    shutil.rmtree(out / "manifests", ignore_errors=True)
    print(json.dumps({k: v for k, v in summary.items() if k != "per_epoch"}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
