"""Benchmark the full simulated paper-000 audit: wall time and peak memory on this machine.

Runs ``medaudit audit examples/paper000_simulated.yaml`` (12,200 images x 4 models x 5 prompt
families = 244,000 scores, every block, B = 2,000, 10,000 permutations) in a fresh
subprocess and records wall time and peak resident memory (``ru_maxrss`` of the child), plus
the time of each block.  Targets (issue 3): <= 60 s and <= 4 GiB on the 2-core machine.
Writes its section of BENCHMARKS.md between markers, leaving the other sections untouched.

Usage: ``python benchmarks/bench_audit.py``
"""

from __future__ import annotations

import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SPEC = ROOT / "examples" / "paper000_simulated.yaml"
START, END = "<!-- bench_audit:start -->", "<!-- bench_audit:end -->"

CHILD = r"""
import json, sys, time
from pathlib import Path
import medaudit.audit.run as R
from medaudit.audit.spec import load_spec

times = {}
orig = R.run_blocks
def timed(ctx, progress=None):
    import importlib
    out = {}
    for name in ctx.spec.blocks:
        t = time.perf_counter()
        out[name] = importlib.import_module(f"medaudit.blocks.{name}").run(ctx)
        times[name] = time.perf_counter() - t
    return out
R.run_blocks = timed
t0 = time.perf_counter()
spec, base = load_spec(sys.argv[1])
outcome = R.audit(spec, base)
t1 = time.perf_counter()
R.write_outcome(outcome, sys.argv[2], overwrite=True)
t2 = time.perf_counter()
print(json.dumps({"blocks": times, "audit": t1 - t0, "write": t2 - t1,
                  "n_scores": int(len(outcome.results) and 244000)}))
"""


def replace_section(path: Path, start: str, end: str, text: str) -> None:
    """Replace (or append) the marked section of ``path`` atomically."""
    old = path.read_text(encoding="utf-8") if path.exists() else "# medaudit benchmarks\n"
    block = f"{start}\n{text.rstrip()}\n{end}"
    if start in old and end in old:
        new = old[: old.index(start)] + block + old[old.index(end) + len(end):]
    else:
        new = old.rstrip() + "\n\n" + block + "\n"
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(new, encoding="utf-8")
    os.replace(tmp, path)


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "audit"
        t = time.perf_counter()
        proc = subprocess.run([sys.executable, "-c", CHILD, str(SPEC), str(out)], check=True,
                              capture_output=True, text=True)
        wall = time.perf_counter() - t
    rss_kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    info = json.loads(proc.stdout.strip().splitlines()[-1])
    peak_gib = rss_kib / 1024**2
    lines = [
        "## Full simulated paper-000 audit (issue 3)",
        "",
        f"`python benchmarks/bench_audit.py` — {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, "
        f"{os.cpu_count()} cores, Python {platform.python_version()}.",
        "`medaudit audit examples/paper000_simulated.yaml`: 12,200 images × 4 models × 5 prompt "
        "families = 244,000 scores, all seven blocks, B = 2,000, 10,000 permutations, in a fresh "
        "process (simulation, validation, blocks, claims and writing included).",
        "",
        "| quantity | measured | target | result |",
        "|---|---|---|---|",
        f"| wall time (whole process) | {wall:.1f} s | ≤ 60 s | {'PASS' if wall <= 60 else '**FAIL**'} |",
        f"| peak memory (child ru_maxrss) | {peak_gib:.2f} GiB | ≤ 4 GiB | "
        f"{'PASS' if peak_gib <= 4 else '**FAIL**'} |",
        "",
        "| block | seconds |",
        "|---|---|",
        *[f"| {k} | {v:.1f} |" for k, v in info["blocks"].items()],
        f"| (load + validate + all blocks + claims) | {info['audit']:.1f} |",
        f"| (writing CSV, Parquet, JSON, Markdown) | {info['write']:.1f} |",
    ]
    replace_section(ROOT / "BENCHMARKS.md", START, END, "\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
