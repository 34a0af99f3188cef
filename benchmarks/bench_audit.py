"""Benchmark the simulated paper-000 audit end to end: wall time, peak memory, breakdown, scaling.

What is timed (issue 18):

1. **The ``make demo`` job** — ``medaudit audit examples/paper000_simulated.yaml --out DIR
   --overwrite`` in a fresh process (import, simulation, validation, every block, claims,
   tables, results.json, summary.md, the report and its figures), ``--repeat`` times, with
   the default execution (a pool of one worker per usable core when the work pays for it)
   and in process (``execution: {num_workers: 1}``), interleaved.  Peak memory: the largest
   resident set of any process of the run (``ru_maxrss`` of the children) and the peak of
   the summed proportional set size (PSS, shared pages split between the processes that
   share them) of the whole process tree, sampled twice a second from ``/proc``.
2. **Where the time goes** — the same audit in an instrumented child: loading the inputs,
   each block, the claims, and each step of writing (the results.json text, the table files,
   summary.md, the page, the wait for the figures drawn by worker processes).
3. **Scaling** — the same study simulated with ×1, ×4 and ×16 the images of every group
   (``simulate_scale``; the spec caps it at 1 for users, the benchmark sets it directly), each
   size read from the table the audit built (images, scores), not assumed.  ``--b16``
   measures ×16 at a smaller B (the ratio is then per replicate and is said so).

Targets: the demo job <= 12 s on 2 cores, peak memory <= 1 GiB, ×16 <= 16 × the ×1 time.
With ``--write`` the report replaces this script's section of BENCHMARKS.md.

Usage: ``python benchmarks/bench_audit.py [--repeat 3] [--scales 1,4,16] [--b16 B] [--write]``
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SPEC = ROOT / "examples" / "paper000_simulated.yaml"

#: the instrumented child: the audit and write_outcome with every phase timed
CHILD = r"""
import json, sys, time
t_start = time.perf_counter()
import medaudit.audit.run as R
import medaudit.report.html as H
import medaudit.report.summary as S
from medaudit.audit.spec import load_spec
from medaudit.backends import ExecutionSpec

t_import = time.perf_counter() - t_start
phases, blocks = {}, {}

def timed(module, name, into, label=None):
    fn = getattr(module, name)
    def wrapper(*args, **kwargs):
        t = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            key = label(*args) if callable(label) else (label or name)
            into[key] = into.get(key, 0.0) + time.perf_counter() - t
    setattr(module, name, wrapper)

sizes = {}
_build = R.build_context
def build_context(*args, **kwargs):
    t = time.perf_counter()
    out = _build(*args, **kwargs)
    phases["load and validate the inputs"] = time.perf_counter() - t
    table = out[0].scores  # the size of the audit, read from the table it built
    sizes["n_scores"] = int(len(table))
    sizes["n_images"] = int(len(table[["cohort", "image_id"]].drop_duplicates()))
    return out
R.build_context = build_context
timed(R, "run_block", blocks, lambda spec, name, ctx: name)
timed(R, "build_claims", phases, "claims (portability matrix)")
timed(R, "results_text", phases, "write: results.json text and the outcome it rebuilds")
timed(R, "write_results", phases, "write: tables (CSV + Parquet) and results.json")
timed(S, "audit_summary", phases, "write: summary.md")
timed(H, "start_figures", phases, "write: start the figure workers")
timed(H, "_table_view", phases, "write: the page's tables")
timed(H._Drawing, "__call__", phases, "write: wait for the figures")
timed(H.Report, "render", phases, "write: render the page (tables, figures, checklist)")

spec_path, out, scale, b, workers = sys.argv[1:6]
spec, base = load_spec(spec_path)
update = {"simulate_scale": float(scale), "allow_large": True}
if b != "-":
    update["n_resamples"] = int(b)
if workers != "-":
    update["execution"] = ExecutionSpec(num_workers=int(workers))
spec = spec.model_copy(update=update)  # a scale above 1 needs allow_large (set here)
t0 = time.perf_counter()
outcome = R.audit(spec, base)
t1 = time.perf_counter()
R.write_outcome(outcome, out, overwrite=True)
t2 = time.perf_counter()
print(json.dumps({"import": t_import, "audit": t1 - t0, "write": t2 - t1, "blocks": blocks,
                  "phases": phases, **sizes, "n_resamples": spec.n_resamples,
                  "total_in_child": time.perf_counter() - t_start}))
"""


def _tree(pid: int) -> list[int]:
    """``pid`` and its descendants (Linux /proc)."""
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        try:
            for tid in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{tid}/children") as fh:
                    todo += [int(c) for c in fh.read().split()]
        except OSError:
            continue
    return out


def _pss_kib(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/smaps_rollup") as fh:
            for line in fh:
                if line.startswith("Pss:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def run_child(cmd: list[str]) -> tuple[float, float, str]:
    """Run ``cmd``; return (wall seconds, peak summed PSS of its process tree in GiB, stdout)."""
    t = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            cwd=ROOT)
    peak = [0]

    def sample() -> None:
        # reading smaps_rollup walks every mapping of a process (kernel time): twice a
        # second keeps the sampler's own cost far below the run's, and the memory peak
        # (the blocks' work buffers) lasts seconds
        while proc.poll() is None:
            peak[0] = max(peak[0], sum(_pss_kib(p) for p in _tree(proc.pid)))
            time.sleep(0.5)

    th = threading.Thread(target=sample, daemon=True)
    th.start()
    out, err = proc.communicate()
    wall = time.perf_counter() - t
    th.join()
    if proc.returncode:
        raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}):\n{err[-3000:]}")
    return wall, peak[0] / 1024**2, out


def _maxrss_gib() -> float:
    return resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024**2


def _loadavg() -> str:
    return ", ".join(f"{x:.2f}" for x in os.getloadavg())


def _git(*args: str) -> str:
    try:
        return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True,
                              check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return ""


def _spec_with_workers(tmp: Path, workers: int | None) -> Path:
    """The example spec, with ``execution: {num_workers: N}`` when asked (same folder
    semantics: the spec has no relative input)."""
    text = SPEC.read_text(encoding="utf-8")
    if workers is not None:
        text += f"\nexecution: {{backend: local, num_workers: {workers}}}\n"
    p = tmp / f"spec_{workers or 'default'}.yaml"
    p.write_text(text, encoding="utf-8")
    return p


def _median(xs: list[float]) -> float:
    return statistics.median(xs) if xs else float("nan")


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3, help="runs of the demo job per setting")
    ap.add_argument("--scales", default="1,4,16", help="image multiples for the scaling table")
    ap.add_argument("--b16", type=int, default=None,
                    help="B for the largest scale (default: the spec's, 2,000)")
    args = ap.parse_args(argv)
    from medaudit import __version__

    started = time.perf_counter()
    load_start = _loadavg()
    py = sys.executable
    env_note = "; ".join(f"{k}={v}" for k, v in os.environ.items()
                         if k.startswith(("OMP_", "OPENBLAS_", "MKL_", "MALLOC_")))
    res: dict = {"demo": {}, "breakdown": None, "scaling": []}
    with tempfile.TemporaryDirectory() as tmp_s:
        tmp = Path(tmp_s)
        specs = {"default (pool)": _spec_with_workers(tmp, None),
                 "in process (num_workers: 1)": _spec_with_workers(tmp, 1)}
        # 1. the demo job, settings interleaved so that a burst of load hits both alike
        for i in range(args.repeat):
            for label, spec in (specs.items() if i % 2 == 0 else reversed(specs.items())):
                wall, pss, _ = run_child([py, "-m", "medaudit", "audit", str(spec), "--out",
                                          str(tmp / "demo"), "--overwrite", "--quiet"])
                d = res["demo"].setdefault(label, {"wall": [], "pss": []})
                d["wall"].append(wall)
                d["pss"].append(pss)
        res["maxrss_gib"] = _maxrss_gib()
        # 2. where the time goes (default execution)
        _, pss, out = run_child([py, "-c", CHILD, str(SPEC), str(tmp / "b"), "1", "-", "-"])
        res["breakdown"] = json.loads(out.strip().splitlines()[-1])
        # 3. scaling
        scales = [float(s) for s in args.scales.split(",")]
        for k in scales:
            b = args.b16 if (args.b16 and k == max(scales)) else None
            wall, pss, out = run_child([py, "-c", CHILD, str(SPEC), str(tmp / f"s{k:g}"),
                                        str(k), str(b) if b else "-", "-"])
            info = json.loads(out.strip().splitlines()[-1])
            res["scaling"].append({"scale": k, "wall": wall, "pss": pss, **info})
    res["elapsed"] = time.perf_counter() - started
    _report(res, load_start, env_note, __version__)
    return res


def _report(res: dict, load_start: str, env_note: str, version: str) -> None:
    demo = res["demo"]
    pool = demo["default (pool)"]
    serial = demo["in process (num_workers: 1)"]
    t_pool, t_ser = _median(pool["wall"]), _median(serial["wall"])
    pss = max(pool["pss"] + serial["pss"])
    rss = res["maxrss_gib"]
    sc = res["scaling"]
    base = next((r for r in sc if r["scale"] == 1), sc[0] if sc else None)
    top = sc[-1] if sc else None
    commit = _git("rev-parse", "--short", "HEAD")
    dirty = " (with uncommitted changes)" if _git("status", "--porcelain", "--", "src",
                                                 "benchmarks") else ""
    b = res["breakdown"]
    lines = [
        "## Full simulated paper-000 audit (`benchmarks/bench_audit.py`)",
        "",
        "The `make demo` job, `medaudit audit "
        "examples/paper000_simulated.yaml --out DIR --overwrite`, in a fresh process (import, "
        "simulation, validation, every block, claims, tables, results.json, summary.md, the "
        f"report and its figures): {b['n_images']:,} images, {b['n_scores']:,} scores, "
        f"B = {b['n_resamples']:,}. Each figure is the median of {len(pool['wall'])} runs, the "
        "two settings interleaved. The machine is shared: the load average is recorded.",
        "",
        f"- Date: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; commit {commit}{dirty}; "
        f"medaudit {version}",
        f"- Machine: {platform.processor() or platform.machine()}; os.cpu_count() = "
        f"{os.cpu_count()}, usable = {len(os.sched_getaffinity(0))}; Python "
        f"{platform.python_version()}",
        f"- Environment: {env_note or 'no thread or allocator variables set'}",
        f"- Load average (1, 5, 15 min) at start: {load_start}; at the end: {_loadavg()}",
        "",
        "### Targets",
        "",
        "| target | measured | required | result |",
        "|---|---|---|---|",
        f"| demo job, wall time (default execution) | {t_pool:.1f} s | <= 12 s on 2 cores | "
        f"{'PASS' if t_pool <= 12 else '**FAIL**'} |",
        f"| peak memory, summed PSS of the process tree | {pss:.2f} GiB | <= 1 GiB | "
        f"{'PASS' if pss <= 1 else '**FAIL**'} |",
    ]
    if base and top and top is not base:
        per_rep = top["n_resamples"] != base["n_resamples"]
        ratio = (top["wall"] / top["n_resamples"]) / (base["wall"] / base["n_resamples"]) \
            if per_rep else top["wall"] / base["wall"]
        k = top["scale"] / base["scale"]
        lines.append(f"| x{top['scale']:g} images / x{base['scale']:g}"
                     f"{' (per replicate: B differs)' if per_rep else ''} | {ratio:.1f}x | "
                     f"<= {k:g}x | {'PASS' if ratio <= k else '**FAIL**'} |")
    lines += [
        "",
        "### 1. The demo job",
        "",
        "| execution | wall time (s) | runs | peak summed PSS (GiB) |",
        "|---|---|---|---|",
        *[f"| {label} | {_median(d['wall']):.1f} | {', '.join(f'{x:.1f}' for x in d['wall'])} | "
          f"{max(d['pss']):.2f} |" for label, d in demo.items()],
        "",
        f"Speed-up of the pool over the in-process run: x{t_ser / t_pool:.2f}. Largest resident "
        f"set of any one process (ru_maxrss): {rss:.2f} GiB.",
        "",
        "### 2. Where the time goes (default execution, one instrumented run)",
        "",
        "| phase | seconds |",
        "|---|---|",
        f"| import medaudit | {b['import']:.2f} |",
    ]
    ph = b["phases"]
    lines.append(f"| load and validate the inputs (simulation included) | "
                 f"{ph.get('load and validate the inputs', float('nan')):.2f} |")
    lines += [f"| block `{k}` | {v:.2f} |" for k, v in b["blocks"].items()]
    render = "write: render the page (tables, figures, checklist)"
    nested = ("write: the page's tables", "write: wait for the figures")
    for k, v in ph.items():
        if k == "load and validate the inputs":
            continue
        if k == render:  # rendering includes building the tables and waiting for the figures
            k, v = "write: render the page (the rest: matrix, checklist, template)", v - sum(
                ph.get(n, 0.0) for n in nested)
        lines.append(f"| {k} | {v:.2f} |")
    lines += [
        f"| (audit: inputs, blocks, claims) | {b['audit']:.2f} |",
        f"| (write_outcome, all of it) | {b['write']:.2f} |",
        f"| (whole child process) | {b['total_in_child']:.2f} |",
        "",
        "The page's tables, summary.md and the table files are written while the figure workers "
        "draw; the wait for the figures is what is left of drawing them.",
        "",
        "### 3. Scaling with the number of images",
        "",
        "| images | scores | B | wall time (s) | / x1 | per replicate / x1 | peak summed PSS (GiB) |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in sc:
        rel = r["wall"] / base["wall"] if base else float("nan")
        rel_b = (r["wall"] / r["n_resamples"]) / (base["wall"] / base["n_resamples"]) if base \
            else float("nan")
        lines.append(f"| {r['n_images']:,} (x{r['scale']:g}) | {r['n_scores']:,} | "
                     f"{r['n_resamples']:,} | {r['wall']:.1f} | {rel:.1f}x | {rel_b:.1f}x | "
                     f"{r['pss']:.2f} |")
    if top is not None and base is not None and top["n_resamples"] != base["n_resamples"]:
        lines += ["", f"x{top['scale']:g} ran at B = {top['n_resamples']:,} instead of "
                  f"{base['n_resamples']:,} to bound the benchmark's time; its ratio is per "
                  "replicate (import, simulation and writing do not shrink with B, so this "
                  "overstates the per-replicate cost)."]
    lines += ["", f"Total benchmark time {res['elapsed']:.0f} s."]
    print("\n".join(lines))


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from _sections import run_and_record

    run_and_record("bench_audit", "Full simulated paper-000 audit", main)
