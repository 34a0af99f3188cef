"""Zero-shot scoring throughput: ``medaudit score``'s pipeline against the encoder's bare forward.

What is timed (issue 18, item 5), on the same images and the same model:

* **medaudit** -- :func:`medaudit.adapters.score_manifest` end to end, with no embedding
  cache: hashing every file, decoding, preprocessing, the image forward passes, the text
  prompts of the five paper-000 families and the scores.
* **bare forward** -- ``model.encode_image`` on the already preprocessed batches of the same
  size, under ``torch.inference_mode`` (decoding and preprocessing excluded: the floor).
* **decode + preprocess** -- the part of the pipeline that is not the forward pass, timed
  alone, so that the gap between the two is accounted for.

The model is open_clip's ViT-B-32 (the ``openclip`` registry entry's architecture) with
random weights -- the network is the real one, only the weights are not (nothing is
downloaded); throughput does not depend on the weights.  Images: real chest X-rays from
``../shared/data`` (TBX11K positives and NIH ChestX-ray14), never copied.  Target: medaudit
>= 80 % of the bare forward's images per second.  ``--device cuda`` runs it on a GPU.

Usage: ``python benchmarks/bench_score.py [--images 96] [--batch 32] [--device cpu] [--write]``
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
DATA = ROOT.parent / "shared" / "data"


def _manifest(n: int) -> pd.DataFrame:
    tbx = DATA / "tbx11k_tb_positive_subset"
    nih = DATA / "nih_cxr14_google_expert_readers"
    if not (tbx.is_dir() and nih.is_dir()):
        raise SystemExit(f"the shared data folders are missing under {DATA}")
    t = pd.read_csv(tbx / "labels.csv")["image"].head(n // 2)
    m = pd.read_csv(nih / "images_256_manifest.csv")["image_id"].head(n - len(t))
    rows = [{"image_id": f"tbx/{i}", "path": str(tbx / "images_256" / i), "cohort": "bench",
             "label": 1} for i in t]
    rows += [{"image_id": f"nih/{i}", "path": str(nih / "images_256" / i), "cohort": "bench",
              "label": 0} for i in m]
    return pd.DataFrame(rows)


def main(argv: list[str]) -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--images", type=int, default=96)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)

    import numpy as np
    import open_clip
    import torch
    from PIL import Image

    from medaudit.adapters import load_encoder, score_manifest

    torch.manual_seed(0)
    model, _, preprocess = open_clip.create_model_and_transforms("ViT-B-32", pretrained=None)
    model = model.to(args.device).eval()
    tokenizer = open_clip.get_tokenizer("ViT-B-32")
    encoder = load_encoder("openclip", model=model, preprocess=preprocess, tokenizer=tokenizer,
                           revision="random weights (benchmark)", device=args.device)
    manifest = _manifest(args.images)
    n = len(manifest)

    def pipeline() -> float:
        t0 = time.perf_counter()
        res = score_manifest(manifest, encoder, batch_size=args.batch)
        if args.device.startswith("cuda"):
            torch.cuda.synchronize()
        assert len(res.failures) == 0 and len(res.scores)
        return time.perf_counter() - t0

    def decoded() -> list[torch.Tensor]:
        out = []
        for start in range(0, n, args.batch):
            ims = [Image.open(p).convert("RGB") for p in manifest["path"].iloc[start:start + args.batch]]
            out.append(torch.stack([preprocess(im) for im in ims]))
        return out

    def decode_time() -> float:
        t0 = time.perf_counter()
        decoded()
        return time.perf_counter() - t0

    batches = [b.to(args.device) for b in decoded()]

    def bare() -> float:
        t0 = time.perf_counter()
        with torch.inference_mode():
            for x in batches:
                model.encode_image(x)
        if args.device.startswith("cuda"):
            torch.cuda.synchronize()
        return time.perf_counter() - t0

    bare()  # warm-up (allocator, kernels)
    pipeline()
    times: dict[str, list[float]] = {"medaudit": [], "bare": [], "decode": []}
    for _ in range(args.repeat):  # interleaved, so a change of load hits every method
        times["bare"].append(bare())
        times["medaudit"].append(pipeline())
        times["decode"].append(decode_time())
    med = {k: statistics.median(v) for k, v in times.items()}
    ips = {k: n / v for k, v in med.items()}
    ratio = ips["medaudit"] / ips["bare"]
    dev = (torch.cuda.get_device_name(0) if args.device.startswith("cuda")
           else f"CPU ({platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
                f"{torch.get_num_threads()} torch threads)")
    print("# Zero-shot scoring throughput")
    print()
    print(f"- Device: {dev}; torch {torch.__version__}, open_clip {open_clip.__version__}, "
          f"numpy {np.__version__}")
    print(f"- Model: open_clip ViT-B-32, random weights; {n} real chest X-rays (256 px PNG), "
          f"batch {args.batch}; medians of {args.repeat} interleaved runs")
    print("- GPU: no device was lent to this session, so the GPU row is not measured here; "
          "`--device cuda` runs the same script on one." if not args.device.startswith("cuda")
          else "- GPU run.")
    print()
    print("| what | seconds | images/s |")
    print("|---|---|---|")
    print(f"| bare forward (`encode_image` on preprocessed batches) | {med['bare']:.2f} | "
          f"{ips['bare']:.1f} |")
    print(f"| medaudit `score_manifest` (hash, decode, preprocess, forward, prompts, scores) | "
          f"{med['medaudit']:.2f} | {ips['medaudit']:.1f} |")
    print(f"| decode + preprocess alone | {med['decode']:.2f} | {ips['decode']:.1f} |")
    print()
    verdict = "PASS" if ratio >= 0.8 else "**FAIL**"
    print(f"Target: medaudit >= 80 % of the bare forward's images/s. Measured: {100 * ratio:.0f} % "
          f"({verdict}). The difference is the text tower on the prompt families' texts, "
          f"hashing, and decoding with preprocessing ({med['decode']:.2f} s alone); on a GPU the "
          "image forward pass is faster, so the same overhead is a larger share there.")


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from _sections import run_and_record

    run_and_record("bench_score", "Zero-shot scoring throughput", main)
