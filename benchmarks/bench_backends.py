"""Benchmark the execution backends: local before/after the ctx.map refactor, Ray overhead, 1 -> 2 workers.

Three measurements on the simulated paper-000 design (issue 9):

1. **Local path, before vs after.**  The six refactored blocks (operating_points, prompts,
   spectrum, prevalence, transport, retained) as they were at ``--rev`` (read with
   ``git show REV:...`` at run time, never checked out) and as they are now, on the same
   context with no backend; best of ``--repeat`` runs each, and the tables must be equal.
2. **Ray overhead** for a small audit: ``audit()`` on local vs Ray (1 and 2 workers) at
   ``--small`` scale, B = 200.  Ray is initialised once beforehand (its start-up is reported
   separately, not charged to the audit).
3. **Speed-up from 1 to 2 workers** on a larger audit (``--large`` scale, ``--b`` resamples).

Prints a table (and JSON with ``--json``); it does not edit BENCHMARKS.md.

Usage: ``python benchmarks/bench_backends.py [--rev a15f47f] [--repeat 3]``
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
SPEC = ROOT / "examples" / "paper000_simulated.yaml"
BLOCKS = ("operating_points", "prompts", "spectrum", "prevalence", "transport", "retained")
#: the commit the ctx.map refactor started from (AuditContext.map added, blocks not yet using it)
PRE_REFACTOR = "a15f47f"


def _old_block(name: str, rev: str):
    """The block module as it was at ``rev`` (imported under a private name, never written)."""
    src = subprocess.run(["git", "show", f"{rev}:src/medaudit/blocks/{name}.py"], cwd=ROOT,
                         capture_output=True, text=True, check=True).stdout
    spec = importlib.util.spec_from_loader(f"medaudit.blocks._pre_{name}", loader=None)
    mod = importlib.util.module_from_spec(spec)
    exec(compile(src, f"{rev}:{name}.py", "exec"), mod.__dict__)  # noqa: S102 - our own history
    return mod


def _context(scale: float, n_resamples: int, seeds: bool = False):
    from medaudit.audit.context import build_context
    from medaudit.audit.spec import load_spec

    spec, base = load_spec(SPEC)
    spec = spec.model_copy(update={"simulate_scale": scale, "n_resamples": n_resamples,
                                   "n_permutations": 999})
    return build_context(spec, base)[0]


def _best(fn, repeat: int) -> tuple[float, object]:
    best, out = float("inf"), None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t)
    return best, out


def local_before_after(rev: str, repeat: int, scale: float, b: int) -> list[dict]:
    import importlib

    ctx = _context(scale, b)
    rows = []
    for name in BLOCKS:
        old, new = _old_block(name, rev), importlib.import_module(f"medaudit.blocks.{name}")
        t_old, r_old = _best(lambda m=old: m.run(ctx), repeat)
        t_new, r_new = _best(lambda m=new: m.run(ctx), repeat)
        for t in r_old.tables:
            pd.testing.assert_frame_equal(r_old.tables[t], r_new.tables[t], check_exact=True)
        rows.append({"block": name, "before_s": t_old, "after_s": t_new,
                     "ratio": t_new / t_old if t_old else float("nan"), "tables_equal": True})
    return rows


def ray_audits(scale: float, b: int, workers: tuple, repeat: int) -> list[dict]:
    from medaudit.audit.run import audit
    from medaudit.audit.spec import load_spec
    from medaudit.backends import ExecutionSpec

    spec, base = load_spec(SPEC)
    spec = spec.model_copy(update={"simulate_scale": scale, "n_resamples": b,
                                   "n_permutations": 999})
    rows = []
    for label, ex in [("local", ExecutionSpec())] + [
            (f"ray x{k}", ExecutionSpec(backend="ray", num_workers=k)) for k in workers]:
        s = spec.model_copy(update={"execution": ex})
        t, _ = _best(lambda s=s: audit(s, base), repeat)
        rows.append({"scale": scale, "n_resamples": b, "backend": label, "audit_s": t})
    return rows


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rev", default=PRE_REFACTOR, help="git revision of the pre-change blocks")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--small", type=float, default=0.05)
    ap.add_argument("--large", type=float, default=0.25)
    ap.add_argument("--b", type=int, default=1000, help="resamples for the large audit")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)

    out: dict = {"cpus": os.cpu_count(), "python": sys.version.split()[0]}
    out["local_before_after"] = local_before_after(args.rev, args.repeat, args.small, 200)

    import ray

    t = time.perf_counter()
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    out["ray_init_s"] = time.perf_counter() - t
    try:
        out["small"] = ray_audits(args.small, 200, (1, 2), args.repeat)
        out["large"] = ray_audits(args.large, args.b, (1, 2), 1)
    finally:
        ray.shutdown()

    if args.json:
        print(json.dumps(out, indent=2))
        return out
    print(f"machine: {out['cpus']} CPUs, Python {out['python']}; ray.init {out['ray_init_s']:.1f} s")
    print(f"\nlocal path, six refactored blocks (best of {args.repeat}), before -> after:")
    for r in out["local_before_after"]:
        print(f"  {r['block']:<17} {r['before_s']:7.3f} s -> {r['after_s']:7.3f} s "
              f"(x{r['ratio']:.2f}; tables equal: {r['tables_equal']})")
    tb = sum(r["before_s"] for r in out["local_before_after"])
    ta = sum(r["after_s"] for r in out["local_before_after"])
    print(f"  {'total':<17} {tb:7.3f} s -> {ta:7.3f} s (x{ta / tb:.2f})")
    for key in ("small", "large"):
        rows = out[key]
        loc = rows[0]["audit_s"]
        print(f"\naudit at scale {rows[0]['scale']}, B = {rows[0]['n_resamples']}:")
        for r in rows:
            print(f"  {r['backend']:<8} {r['audit_s']:7.2f} s (x{r['audit_s'] / loc:.2f} of local)")
        one = next(r["audit_s"] for r in rows if r["backend"] == "ray x1")
        two = next(r["audit_s"] for r in rows if r["backend"] == "ray x2")
        print(f"  speed-up 1 -> 2 workers: x{one / two:.2f}")
    return out


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from _sections import run_and_record

    run_and_record("bench_backends", "Execution backends: local vs Ray (issue 9)", main)
