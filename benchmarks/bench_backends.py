"""Benchmark the execution backends on the simulated paper-000 audit: in process, the local pool, Ray.

For each size (``--scales``, multiples of the example's images; ``simulate_scale`` is set
with `allow_large`, so sizes above the user cap of 1 are allowed here) the same audit runs

* in process (``execution: {num_workers: 1}``),
* on the local pool (``num_workers: 2``; cells dispatched to two forked workers, large cells
  cut into replicate ranges),
* on Ray with 1 and 2 workers (a local Ray instance started once beforehand; its start-up
  is reported on its own line and added to the Ray times in a second column),

and every run's tables, portability matrix and results.json are compared byte for byte with
the in-process run (the figures and page are drawn from results.json, so they follow).
Times are ``audit()`` plus writing the tables and results.json; the median of ``--repeat``
interleaved runs.

Usage: ``python benchmarks/bench_backends.py [--scales 0.25,1] [--b 2000] [--repeat 3] [--write]``
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SPEC = ROOT / "examples" / "paper000_simulated.yaml"


def _files(d: Path) -> dict[str, bytes]:
    return {p.relative_to(d).as_posix(): p.read_bytes() for p in sorted(d.rglob("*")) if p.is_file()}


def _run(spec, base, out: Path) -> tuple[float, dict[str, bytes]]:
    """``audit`` + the tables and results.json (what every backend must reproduce)."""
    from medaudit.audit.outcome import write_results
    from medaudit.audit.run import audit

    t = time.perf_counter()
    outcome = audit(spec, base)
    out.mkdir(parents=True)
    write_results(outcome, out)
    return time.perf_counter() - t, _files(out)


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scales", default="0.25,1", help="multiples of the example's images")
    ap.add_argument("--b", type=int, default=2000, help="resamples (B)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--no-ray", action="store_true", help="skip the Ray backend")
    args = ap.parse_args(argv)

    from medaudit.audit.spec import load_spec
    from medaudit.backends import ExecutionSpec

    load0 = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    settings = [("in process", ExecutionSpec(num_workers=1)),
                ("local pool x2", ExecutionSpec(num_workers=2))]
    ray_init = None
    ray = None
    if not args.no_ray:
        try:
            import ray
        except ImportError:
            ray = None
        if ray is not None:
            t = time.perf_counter()
            ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
                     configure_logging=False)
            ray_init = time.perf_counter() - t
            settings += [("ray x1", ExecutionSpec(backend="ray", num_workers=1)),
                         ("ray x2", ExecutionSpec(backend="ray", num_workers=2))]
    results: list[dict] = []
    try:
        with tempfile.TemporaryDirectory() as tmp_s:
            tmp = Path(tmp_s)
            for scale in (float(s) for s in args.scales.split(",")):
                spec, base = load_spec(SPEC)
                spec = spec.model_copy(update={"simulate_scale": scale, "n_resamples": args.b,
                                               "allow_large": True})
                # a discarded run first: lazy imports and caches are not charged to anyone
                _run(spec.model_copy(update={"execution": settings[0][1]}), base,
                     tmp / f"{scale:g}-warm")
                times: dict[str, list[float]] = {k: [] for k, _ in settings}
                same: dict[str, bool] = {}
                reference = None
                n = 0
                for i in range(args.repeat):
                    order = settings if i % 2 == 0 else settings[::-1]
                    for label, ex in order:
                        n += 1
                        t, files = _run(spec.model_copy(update={"execution": ex}), base,
                                        tmp / f"{scale:g}-{n}")
                        times[label].append(t)
                        if label == "in process" and reference is None:
                            reference = files
                        same.setdefault(label, True)
                        same[label] &= files == reference  # the in-process run comes first
                results.append({"scale": scale, "times": times, "same": same})
    finally:
        if ray is not None and ray.is_initialized():
            ray.shutdown()

    cpus = len(os.sched_getaffinity(0))
    print("## Execution backends")  # replaced by the section title
    print()
    print(f"Machine: {cpus} usable cores, Python {sys.version.split()[0]}; load average at start "
          f"{load0}, at the end {', '.join(f'{x:.2f}' for x in os.getloadavg())}; B = {args.b:,}; "
          f"median of {args.repeat} interleaved runs each.")
    if ray_init is not None:
        print(f"ray.init (local instance, 2 CPUs): {ray_init:.1f} s, once; the second Ray column "
              "adds it to every Ray run.")
    print()
    print("| images | execution | audit + tables (s) | with Ray start-up (s) | / in process | "
          "same bytes as in process |")
    print("|---|---|---|---|---|---|")
    for r in results:
        ref = statistics.median(r["times"]["in process"])
        for label, ts in r["times"].items():
            med = statistics.median(ts)
            start = f"{med + ray_init:.2f}" if label.startswith("ray") and ray_init else ""
            print(f"| x{r['scale']:g} | {label} | {med:.2f} | {start} | {med / ref:.2f}x | "
                  f"{'yes' if r['same'][label] else '**NO**'} |")
    return {"results": results, "ray_init": ray_init}


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from _sections import run_and_record

    run_and_record("bench_backends", "Execution backends: in process, local pool, Ray", main)
