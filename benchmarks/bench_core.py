#!/usr/bin/env python
"""Benchmark of medaudit's statistics core against its own floors and its peers, in one run.

Run from the repository root (OPENBLAS_CORETYPE/OPENBLAS_L2_SIZE, where set for old
OpenBLAS builds, slow a current numpy: unset both for this command alone)::

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python benchmarks/bench_core.py --write
    python benchmarks/bench_core.py --quick        # small sizes, prints only

This is a script, not a test: it measures wall time on whatever machine runs it and
reports PASS/FAIL against stated targets without failing.  Every method in a table sees
the same data.  Each figure is the median of interleaved repeats (the methods of a
table take turns, so a burst of load on a shared machine hits them alike); a method too
slow to repeat runs once and says so.  R's pROC is run by ``Rscript`` in the same run,
timed inside R (``proc.time``, R start-up and reading the data excluded).
"""

from __future__ import annotations

import argparse
import datetime as _dt
import gc
import math
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import scipy
import scipy.stats
from scipy import special

import medaudit
from medaudit.stats import _kernels as K
from medaudit.stats import _metricspec as MS
from medaudit.stats import bootstrap_ci, bootstrap_metrics, delong_test
from medaudit.stats import designs as _designs
from medaudit.stats._kernels import argsort_stable
from medaudit.stats.soft import soft_average_precision, soft_roc_auc

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _sections import replace_section  # noqa: E402

try:
    import sklearn
    from sklearn.metrics import roc_auc_score
except ImportError:  # pragma: no cover - the bench extra installs it
    sys.exit("bench_core.py needs scikit-learn (pip install -e '.[bench]').")

ROOT = Path(__file__).resolve().parents[1]
B = 2000  # bootstrap replicates everywhere
SEED = 2026
MU = 1.2  # binormal separation: positives N(MU, 1), negatives N(0, 1); AUROC ~ 0.80
MULTI = ["roc_auc", "average_precision", "brier_score", "ece", "aurc"]
TARGETS: list[tuple[str, str, str, str]] = []
NOTES: list[str] = []
LOADS: list[str] = []


# ----------------------------------------------------------------------------- utilities
def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def _loadavg() -> str:
    try:
        return ", ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "n/a"


def section(title: str) -> None:
    LOADS.append(f"{title}: {_loadavg()}")
    log(title)


def interleaved(methods: dict[str, Callable[[], object]], repeats: int,
                once: tuple[str, ...] = ()) -> dict[str, tuple[float, int]]:
    """Median wall time of each method over ``repeats`` rounds in which every method runs
    once, in turn; methods named in ``once`` run in the first round only.  The order
    rotates from round to round, so that no method always runs first (after another
    method's memory traffic, or cold) or last; the garbage collector is off while timing.
    Returns name -> (median seconds, runs)."""
    times: dict[str, list[float]] = {k: [] for k in methods}
    names = list(methods)
    gc.collect()
    gc.disable()
    try:
        for r in range(repeats):
            for k in names[r % len(names):] + names[:r % len(names)]:
                if r and k in once:
                    continue
                t0 = time.perf_counter()
                methods[k]()
                times[k].append(time.perf_counter() - t0)
    finally:
        gc.enable()
    return {k: (float(np.median(v)), len(v)) for k, v in times.items()}


def fmt_s(x: float) -> str:
    return f"{x:.3g}" if x < 0.1 else f"{x:.3f}"


def cell(t: tuple[float, int], note: str = "") -> str:
    how = f"median of {t[1]}" if t[1] > 1 else "1 run"
    return f"{fmt_s(t[0])} ({how}{'; ' + note if note else ''})"


def fmt_ratio(x: float) -> str:
    return f"{x:.2f}x" if x < 10 else f"{x:.1f}x"


def target(what: str, value: float, limit: float, *, at_most: bool = True) -> str:
    ok = value <= limit if at_most else value >= limit
    verdict = "PASS" if ok else "**FAIL**"
    TARGETS.append((what, fmt_ratio(value), f"{'<=' if at_most else '>='} {limit:g}x", verdict))
    return verdict


def _git(*args: str) -> str:
    try:
        return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True,
                              timeout=5).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def machine_description(r_version: str) -> list[str]:
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as fh:
            cpu = next((ln.split(":", 1)[1].strip() for ln in fh if ln.startswith("model name")),
                       cpu)
    except OSError:
        pass
    commit = _git("rev-parse", "--short", "HEAD")
    if commit and _git("status", "--porcelain", "--", "src", "benchmarks"):
        commit += ", with uncommitted changes in src/ or benchmarks/"
    lines = [
        f"- Date: {_dt.datetime.now(_dt.UTC).strftime('%Y-%m-%d %H:%M UTC')}; commit {commit or 'n/a'}",
        f"- CPU: {cpu}; os.cpu_count() = {os.cpu_count()}, usable = {len(os.sched_getaffinity(0))}",
        f"- OS: {platform.platform()}",
        f"- Python {platform.python_version()}; numpy {np.__version__}; scipy {scipy.__version__}; "
        f"scikit-learn {sklearn.__version__}; medaudit {medaudit.__version__}; {r_version}",
    ]
    try:
        from threadpoolctl import threadpool_info
        lines.append("- Thread pools (threadpoolctl): " + "; ".join(
            f"{p.get('internal_api')} {p.get('version')} ({p.get('num_threads')} threads, "
            f"arch {p.get('architecture')})" for p in threadpool_info()))
    except ImportError:
        lines.append("- Thread pools: threadpoolctl not installed")
    env = {k: os.environ[k] for k in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE", "OMP_NUM_THREADS",
                                      "OPENBLAS_NUM_THREADS") if k in os.environ}
    lines.append(f"- Environment: {env or 'no OpenBLAS/thread variables set'}")
    lines.append(f"- Load average (1, 5, 15 min) at start: {_loadavg()}")
    return lines


# ----------------------------------------------------------------------------------- data
def binormal(n: int, n_pos: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Labels with exactly ``n_pos`` positives (shuffled) and binormal scores."""
    rng = np.random.default_rng(seed)
    y = np.zeros(n)
    y[:n_pos] = 1.0
    rng.shuffle(y)
    return y, rng.normal(size=n) + MU * y


def posterior(s: np.ndarray, prevalence: float) -> np.ndarray:
    """P(y=1 | s) under the binormal model: a calibrated probability, monotone in s."""
    return special.expit(math.log(prevalence / (1 - prevalence)) + MU * s - MU * MU / 2)


# ---------------------------------------------------------------------------------- R/pROC
R_SCRIPT = r"""
suppressPackageStartupMessages(library(pROC))
a <- commandArgs(trailingOnly = TRUE)
task <- a[1]; d <- read.csv(a[2]); reps <- as.integer(a[3]); B <- as.integer(a[4])
times <- numeric(reps)
for (i in seq_len(reps)) {
  t0 <- proc.time()[["elapsed"]]
  if (task == "delong") {
    r1 <- roc(d$y, d$a, levels = c(0, 1), direction = "<", quiet = TRUE)
    r2 <- roc(d$y, d$b, levels = c(0, 1), direction = "<", quiet = TRUE)
    val <- roc.test(r1, r2, paired = TRUE, method = "delong")$statistic
  } else {
    r1 <- roc(d$y, d$a, levels = c(0, 1), direction = "<", quiet = TRUE)
    set.seed(2026)
    val <- ci.auc(r1, method = "bootstrap", boot.n = B, boot.stratified = FALSE,
                  progress = "none")[1]
  }
  times[i] <- proc.time()[["elapsed"]] - t0
}
cat(sprintf("%.6f %d %.17g\n", median(times), reps, val))
"""


def r_version() -> str:
    if not shutil.which("Rscript"):
        return "R: not installed (apt-get install -y r-cran-proc)"
    out = subprocess.run(["Rscript", "-e", 'cat(R.version.string, "; pROC",'
                          ' as.character(packageVersion("pROC")))'],
                         capture_output=True, text=True, timeout=60)
    return out.stdout.strip() or "R: pROC not installed (apt-get install -y r-cran-proc)"


def pROC(task: str, y: np.ndarray, a: np.ndarray, b: np.ndarray | None, reps: int
         ) -> tuple[tuple[float, int], float] | None:
    """Median seconds (inside R) and the value pROC returned, or None without R/pROC."""
    if not shutil.which("Rscript"):
        return None
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "d.csv"
        cols = {"y": y.astype(int), "a": a} | ({"b": b} if b is not None else {})
        np.savetxt(data, np.column_stack(list(cols.values())), delimiter=",",
                   header=",".join(cols), comments="", fmt=["%d"] + ["%.17g"] * (len(cols) - 1))
        script = Path(tmp) / "t.R"
        script.write_text(R_SCRIPT)
        out = subprocess.run(["Rscript", str(script), task, str(data), str(reps), str(B)],
                             capture_output=True, text=True, timeout=3600)
    if out.returncode:
        log(f"    pROC {task} failed: {out.stderr.strip()[-300:]}")
        return None
    med, runs, val = out.stdout.split()
    return (float(med), int(runs)), float(val)


# ------------------------------------------------------- 1. several metrics from one draw
def general_path(y, p, metrics, *, n_resamples=B, rng=SEED):
    """The engine's general multi-metric loop for the given metrics (counts drawn into the
    class-split layout, every metric read from one shared cumulative sum), with the binned
    single-AUROC shortcut out of the way: what one AUROC costs among other metrics."""
    plan = _designs.make_plan("within_label", y)
    specs = MS.parse_metrics(metrics)
    prep = MS.Prepared.build(y, p, need_conf=MS.needs_confidence(specs))
    scratch: dict = {}
    out = [MS.evaluate_columns(prep, specs, w, scratch)
           for w in plan.batches(n_resamples, np.random.default_rng(rng),
                                 columns=prep.column_of())]
    return out


def draw_floor(y, p, upto, *, n_resamples=B, rng=SEED):
    """The parts every path pays before any metric: the within-label draw counted into the
    binned AUROC's segments (``upto="binned"``), into the full class-split layout
    (``"layout"``), and that plus the shared cumulative sum (``"cumsum"``)."""
    plan = _designs.make_plan("within_label", y)
    prep = MS.Prepared.build(y, p, need_conf=False)
    cols = prep.placement.bins if upto == "binned" else prep.column_of()
    scratch: dict = {}
    for w in plan.batches(n_resamples, np.random.default_rng(rng), columns=cols):
        if upto == "cumsum":
            K.LayoutSums(w, prep.layout, scratch)


def bench_multi(n: int, n_pos: int, repeats: int) -> list[str]:
    section(f"[1] several metrics from one within-label draw, n={n:,}")
    y, s = binormal(n, n_pos, seed=n)
    p = posterior(s, n_pos / n)
    kw = dict(design="within_label", n_resamples=B, rng=SEED)
    methods = {"one AUROC": lambda: bootstrap_ci(y, p, metric="roc_auc", **kw),
               "5 metrics": lambda: bootstrap_metrics(y, p, metrics=MULTI, **kw),
               "roc_auc (general path)": lambda: general_path(y, p, ["roc_auc"]),
               "floor: the draw, binned": lambda: draw_floor(y, p, "binned"),
               "floor: the draw, full layout": lambda: draw_floor(y, p, "layout"),
               "floor: the draw, full layout + cumulative sum": lambda: draw_floor(y, p, "cumsum")}
    for m in MULTI[1:]:
        methods[m] = lambda m=m: bootstrap_metrics(y, p, metrics=[m], **kw)
    t = interleaved(methods, repeats)
    base = t["one AUROC"][0]
    rows = []
    for k, v in t.items():
        rows.append(f"| {n:,} | {k} | {cell(v)} | {fmt_ratio(v[0] / base)} |")
    target(f"5 metrics / one AUROC, same draw, n={n:,}", t["5 metrics"][0] / base, 2.0)
    # the replicates of the 5-metric call equal those of each metric alone (same draw)
    five = bootstrap_metrics(y, p, metrics=MULTI, **kw)
    alone = bootstrap_metrics(y, p, metrics=["aurc"], **kw)["aurc"]
    NOTES.append(f"n={n:,}: the 5-metric call and each metric alone use the same draw "
                 f"(aurc replicates identical: {np.array_equal(five['aurc'].replicates, alone.replicates)}).")
    return rows


# ------------------------------------------------------------------- 2. AUROC interval
def engine_indices(rng: np.random.Generator, n: int) -> np.ndarray:
    """One ordinary-design replicate's indices, consuming the rng as the engine does."""
    u = rng.random(n)
    u *= n * (1.0 - 2.0**-52)
    return u.astype(np.intp)


def sklearn_loop(y, s, reps: int) -> np.ndarray:
    rng = np.random.default_rng(SEED)
    out = np.empty(reps)
    for b in range(reps):
        idx = engine_indices(rng, y.size)
        out[b] = roc_auc_score(y[idx], s[idx])
    return out


def rank_auroc(y, s, axis=-1):
    """Vectorised Mann-Whitney AUROC (mid-ranks) over the last axis."""
    r = scipy.stats.rankdata(s, axis=-1)
    n1 = y.sum(axis=-1)
    return ((r * y).sum(axis=-1) - n1 * (n1 + 1) / 2) / (n1 * (y.shape[-1] - n1))


def scipy_bootstrap(y, s):
    return scipy.stats.bootstrap((y, s), rank_auroc, vectorized=True, paired=True,
                                 n_resamples=B, batch=max(1, (1 << 21) // y.size),
                                 method="percentile", rng=np.random.default_rng(SEED))


def bench_interval(n: int, n_pos: int, repeats: int, with_r: bool) -> list[str]:
    section(f"[2] AUROC interval, ordinary design, n={n:,}")
    y, s = binormal(n, n_pos, seed=n + 7)
    big = n >= 50_000
    sk_reps = 100 if big else B
    med_fn = lambda: bootstrap_ci(y, s, metric="roc_auc", design="ordinary",  # noqa: E731
                                  n_resamples=B, rng=SEED)
    t = interleaved({"medaudit": med_fn, "sklearn loop": lambda: sklearn_loop(y, s, sk_reps),
                     "scipy.stats.bootstrap": lambda: scipy_bootstrap(y, s)}, repeats,
                    once=("sklearn loop", "scipy.stats.bootstrap") if big else ())
    sk = (t["sklearn loop"][0] * B / sk_reps, t["sklearn loop"][1])
    med = t["medaudit"][0]
    r = pROC("ci", y, s, None, 1 if big else 3) if with_r else None
    ours = med_fn()
    diff = float(np.max(np.abs(ours.replicates[:sk_reps] - sklearn_loop(y, s, sk_reps))))
    NOTES.append(f"n={n:,}: the sklearn loop draws the engine's resamples (same seed, one "
                 f"uniform per item): max |replicate difference| {diff:.1e}; medaudit CI "
                 f"[{ours.ci_low:.4f}, {ours.ci_high:.4f}]" + (
                     f"; pROC ci.auc (its own draws) lower bound {r[1]:.4f}" if r else ""))
    row = [f"| {n:,} | {cell(t['medaudit'])} | "
           f"{cell(sk, f'{sk_reps} replicates timed, x{B // sk_reps}' if big else '')} | "
           f"{cell(t['scipy.stats.bootstrap'])} | {cell(r[0]) if r else 'n/a'} | "
           f"{fmt_ratio(sk[0] / med)} | {fmt_ratio(t['scipy.stats.bootstrap'][0] / med)} | "
           f"{fmt_ratio(r[0][0] / med) if r else 'n/a'} |"]
    target(f"AUROC interval n={n:,}: sklearn loop / medaudit", sk[0] / med, 20, at_most=False)
    return row


# ----------------------------------------------------------------------------- 3. DeLong
def bench_delong(n: int, repeats: int, with_r: bool) -> list[str]:
    section(f"[3] paired DeLong, n={n:,}")
    y, sa = binormal(n, round(0.11 * n), seed=n + 1)
    rng = np.random.default_rng(n + 2)
    sb = 0.6 * sa + 0.8 * rng.normal(size=n) + 0.3 * y
    both = np.concatenate([sa, sb])
    t = interleaved({"delong_test": lambda: delong_test(y, sa, sb),
                     "argsort(2n)": lambda: np.argsort(both),
                     "2 x argsort(n)": lambda: (np.argsort(sa), np.argsort(sb)),
                     "2 x argsort_stable(n)": lambda: (argsort_stable(sa), argsort_stable(sb))},
                    repeats)
    r = pROC("delong", y, sa, sb, 5 if n < 100_000 else 3) if with_r else None
    ratio = t["delong_test"][0] / t["argsort(2n)"][0]
    target(f"paired DeLong n={n:,}: delong_test / argsort(2n)", ratio, 1.5)
    if r:
        z = delong_test(y, sa, sb).statistic
        NOTES.append(f"DeLong n={n:,}: z = {z:.12g} (medaudit), {r[1]:.12g} (pROC roc.test).")
    own = t["delong_test"][0] / t["2 x argsort_stable(n)"][0]
    return [f"| {n:,} | {cell(t['delong_test'])} | {cell(t['argsort(2n)'])} | "
            f"{cell(t['2 x argsort(n)'])} | {cell(t['2 x argsort_stable(n)'])} | "
            f"{fmt_ratio(ratio)} | {fmt_ratio(own)} | "
            f"{cell(r[0]) if r else 'n/a'} | "
            f"{fmt_ratio(r[0][0] / t['delong_test'][0]) if r else 'n/a'} |"]


# ---------------------------------------------------------------------- 4. soft metrics
def bench_soft(n: int, repeats: int) -> list[str]:
    section(f"[4] soft AUROC / AP, n={n:,}")
    rng = np.random.default_rng(n + 3)
    z = rng.normal(size=n)
    p = special.expit(2.0 * z - 2.0)  # soft labels in (0, 1), mean ~0.2
    s = z + rng.normal(size=n)
    del z
    t = interleaved({"argsort(n)": lambda: np.argsort(s),
                     "argsort_stable(n)": lambda: argsort_stable(s, descending=True),
                     "soft_roc_auc": lambda: soft_roc_auc(p, s),
                     "soft_average_precision": lambda: soft_average_precision(p, s)}, repeats)
    rows = []
    for name in ("soft_roc_auc", "soft_average_precision"):
        ratio = t[name][0] / t["argsort(n)"][0]
        rows.append(f"| `{name}` (default form) | {n:,} | {cell(t[name])} | "
                    f"{cell(t['argsort(n)'])} | {cell(t['argsort_stable(n)'])} | "
                    f"{fmt_ratio(ratio)} | {fmt_ratio(t[name][0] / t['argsort_stable(n)'][0])} |")
        target(f"{name} n={n:,}: medaudit / argsort(n)", ratio, 1.3)
    return rows


# -------------------------------------------------------------------------------- report
def render(quick, machine, multi, interval, delong, soft, elapsed) -> str:
    out = [
        "## Statistics core (`benchmarks/bench_core.py`)",
        "",
        "Command: `env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python benchmarks/bench_core.py "
        "--write`. Every figure is a median of interleaved repeats (the methods of a table "
        "take turns, in an order that rotates from round to round); ratios are between "
        "figures of the same run on the same data. The machine is shared: the load average "
        "is recorded as each part starts, and a ratio is only as steady as that load.",
        "",
        *machine,
        "",
    ]
    if quick:
        out += ["**Quick run: small sizes only.**", ""]
    out += [
        "### Targets",
        "",
        "| target | measured | required | result |",
        "|---|---|---|---|",
        *[f"| {a} | {b} | {c} | {d} |" for a, b, c, d in TARGETS],
        "",
        f"### 1. Metrics from one within-label draw (B = {B:,}), against one AUROC",
        "",
        "One AUROC: `bootstrap_ci(y, p, metric=\"roc_auc\", design=\"within_label\")`, the "
        "binned fast path (per-segment counts, no full count matrix). 5 metrics: "
        f"`bootstrap_metrics(..., metrics={MULTI})` on the same draw, the general path "
        "(counts drawn into the class-split layout, one shared cumulative sum). "
        "`roc_auc (general path)`: the AUROC as the general path computes it among other "
        "metrics. Each other row: that metric alone. Data: binormal scores, calibrated "
        "posterior probabilities. The `floor` rows time what every path pays before any "
        "metric: the draw (uniforms, scaled, relabelled, counted by `bincount`) into the "
        "binned AUROC's segments or into the full layout, and the shared cumulative sum. "
        "Against the binned draw, the full layout and its cumulative sum are the general "
        "path's fixed cost; what is left of a row above that floor is its metric's own "
        "passes over the (B, n) counts. These are numpy passes, each already one pass; "
        "fusing them would need compiled loops (numba, C), which medaudit does not take "
        "on for this: their sums would round differently from the numpy path, and the "
        "same seed must give the same bits wherever it runs.",
        "",
        "| n | what | seconds | / one AUROC |",
        "|---|---|---|---|",
        *multi,
        "",
        f"### 2. AUROC percentile interval (B = {B:,}, ordinary design) against peers",
        "",
        "sklearn loop: `roc_auc_score` on each resample (the engine's own draws); scipy: "
        "`scipy.stats.bootstrap` with a vectorised Mann-Whitney statistic; pROC: "
        "`ci.auc(roc, method=\"bootstrap\", boot.n=2000, boot.stratified=FALSE)`, timed in R.",
        "",
        "| n | medaudit (s) | sklearn loop (s) | scipy.stats.bootstrap (s) | pROC ci.auc (s) | "
        "sklearn / medaudit | scipy / medaudit | pROC / medaudit |",
        "|---|---|---|---|---|---|---|---|",
        *interval,
        "",
        "### 3. Paired DeLong test against one argsort of 2n floats and pROC",
        "",
        "pROC: `roc()` for both curves and `roc.test(paired=TRUE, method=\"delong\")`, end to "
        "end, timed in R. `delong_test` makes one sort per curve, with "
        "`stats._kernels.argsort_stable` (numpy's stable order exactly, found by sorting packed "
        "integer keys with numpy's vectorised integer sort: faster than `np.argsort` itself "
        "where that sort is vectorised). The target is against `np.argsort` of the 2n "
        "concatenated scores, as the issue set it; the honest floor is now the two "
        "`argsort_stable` sorts, and `delong / own sorts` says how far above it the test is. "
        "At n = 10^4 what is above the sorts is fixed per-call work: validating three "
        "vectors, splitting the classes, per curve about ten numpy passes (the labels in "
        "sorted order, the cumulative count, the count formula, the scatter back to input "
        "order), the integer check of the AUROC and the two-pass variances: each pass is "
        "1-10 us there. Sorting both curves as the rows of one array (one key-building "
        "pass for both) and laying the items out class by class (no gathers for the "
        "variances) were tried on 2026-12-07, with the same bits out, and timed slower "
        "interleaved with the kept code (372 against 364 us at n = 10^4), so they were "
        "not kept.",
        "",
        "| n | `delong_test` (s) | `np.argsort` 2n (s) | 2 x `np.argsort` n (s) | "
        "2 x `argsort_stable` n (s) | delong / argsort(2n) | delong / own sorts | pROC (s) | "
        "pROC / medaudit |",
        "|---|---|---|---|---|---|---|---|---|",
        *delong,
        "",
        "### 4. Soft AUROC / soft AP against one argsort of n floats",
        "",
        "Both sort the scores once with `argsort_stable` (descending, ties in input order), "
        "gather the labels and take one cumulative sum. The target is against `np.argsort`; "
        "the last column is against the sort they make.",
        "",
        "| function | n | medaudit (s) | `np.argsort` n (s) | `argsort_stable` n (s) | "
        "/ np.argsort | / own sort |",
        "|---|---|---|---|---|---|---|",
        *soft,
        "",
        "### Notes",
        "",
        *[f"- {x}" for x in NOTES],
        f"- Total wall time {elapsed:.0f} s; load average at the end: {_loadavg()}.",
        "- Load average (1, 5, 15 min) as each part started: " + "; ".join(LOADS) + ".",
    ]
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="small sizes only; prints")
    ap.add_argument("--write", action="store_true",
                    help="write the report into BENCHMARKS.md's bench_core section")
    ap.add_argument("--no-r", action="store_true", help="skip the pROC timings")
    args = ap.parse_args(argv)
    t_start = time.perf_counter()
    rv = r_version() if not args.no_r else "R: skipped (--no-r)"
    machine = machine_description(rv)
    with_r = not args.no_r and "pROC" in rv and "not installed" not in rv
    # warm-up: imports and first-call costs of every method, on tiny data
    yw, sw = binormal(300, 40, seed=1)
    bootstrap_metrics(yw, posterior(sw, 40 / 300), metrics=MULTI, design="within_label",
                      n_resamples=10, rng=SEED)
    delong_test(yw, sw, sw[::-1].copy())
    soft_roc_auc(special.expit(sw), sw)
    if args.quick:
        multi = bench_multi(1800, 200, 3)
        interval = bench_interval(1800, 200, 3, with_r)
        delong = bench_delong(10_000, 11, with_r)
        soft = bench_soft(100_000, 5)
    else:
        multi = bench_multi(1800, 200, 7) + bench_multi(100_000, 11_000, 3)
        interval = bench_interval(1800, 200, 5, with_r) + bench_interval(100_000, 11_000, 3, with_r)
        delong = bench_delong(10_000, 41, with_r) + bench_delong(1_000_000, 7, with_r)
        soft = bench_soft(10_000_000, 5)
    NOTES.append("Data: binormal scores (negatives N(0,1), positives N(1.2,1)); n=1,800 has 200 "
                 "positives, larger n 11%. DeLong's second score is 0.6 s_a + 0.8 N(0,1) + 0.3 y."
                 " Soft labels p = expit(2z - 2) with scores s = z + N(0,1).")
    text = render(args.quick, machine, multi, interval, delong, soft,
                  time.perf_counter() - t_start)
    print(text)
    if args.write and not args.quick:
        replace_section(ROOT / "BENCHMARKS.md", "bench_core", text)
        log(f"wrote the bench_core section of {ROOT / 'BENCHMARKS.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
