"""Run every example of ``examples/`` into one folder (for scripts/compare_outputs.py).

    python scripts/run_examples.py OUT [NAME ...]

Runs each audit spec of ``examples/`` (building the NIH probe scores first, which
``examples/nih_readers.yaml`` reads from ``build/``), the Kermany training smoke run and
the audit it writes, into ``OUT/<name>``.  Needs ``../shared/data`` beside the checkout.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
AUDITS = ("paper000_simulated", "paper002_simulated", "kwang311_tb", "enhance_abc",
          "nih_vindr_readers", "nih_readers")


def _run(*args: str) -> float:
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "medaudit", *args], cwd=ROOT, check=True)
    return time.perf_counter() - t0


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__)
        return 2
    out = Path(argv[0]).resolve()
    names = argv[1:] or [*AUDITS, "kermany"]
    out.mkdir(parents=True, exist_ok=True)
    for name in names:
        if name == "nih_readers" and not (ROOT / "build/nih_readers/scores.csv").exists():
            subprocess.run([sys.executable, "examples/build_nih_scores.py", "build/nih_readers"],
                           cwd=ROOT, check=True, stdout=subprocess.DEVNULL)
        if name == "kermany":
            t = _run("train", "supervised", "examples/kermany_supervised.yaml", "--out",
                     str(out / "kermany_train"), "--quiet")
            t += _run("audit", str(out / "kermany_train" / "audit.yaml"), "--out",
                      str(out / "kermany_audit"), "--quiet")
        else:
            t = _run("audit", f"examples/{name}.yaml", "--out", str(out / name), "--overwrite",
                     "--quiet")
        print(f"{name}: {t:.1f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
