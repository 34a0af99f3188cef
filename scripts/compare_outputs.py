"""Compare two audit output folders file by file (and results.json key by key).

Used to show that a refactor leaves every output of every example byte-identical, except
for the changes it lists::

    python scripts/run_examples.py BEFORE   # at the old commit
    python scripts/run_examples.py AFTER    # at the new one
    python scripts/compare_outputs.py BEFORE AFTER

Each differing file is listed; for ``results.json`` the differing JSON paths are listed
(first 20 per file), so an intended change (a new provenance key) is easy to tell from an
unintended one (a changed number).  Exit code 0 when everything is identical, 1 otherwise.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any


def _json_diff(a: Any, b: Any, path: str = "") -> list[str]:
    if isinstance(a, dict) and isinstance(b, dict):
        out = []
        for k in sorted(set(a) | set(b)):
            if k not in a:
                out.append(f"{path}/{k}: added")
            elif k not in b:
                out.append(f"{path}/{k}: removed")
            else:
                out += _json_diff(a[k], b[k], f"{path}/{k}")
        return out
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return [f"{path}: length {len(a)} -> {len(b)}"]
        return [d for i, (x, y) in enumerate(zip(a, b, strict=True)) for d in _json_diff(x, y, f"{path}[{i}]")]
    return [] if a == b else [f"{path}: {a!r:.80} -> {b!r:.80}"]


def compare(before: Path, after: Path) -> list[str]:
    """Lines describing every difference between the two folders (empty when identical)."""
    fa = {p.relative_to(before): p for p in before.rglob("*") if p.is_file()}
    fb = {p.relative_to(after): p for p in after.rglob("*") if p.is_file()}
    lines = [f"only in {before.name}: {k}" for k in sorted(set(fa) - set(fb))]
    lines += [f"only in {after.name}: {k}" for k in sorted(set(fb) - set(fa))]
    for k in sorted(set(fa) & set(fb)):
        a, b = fa[k].read_bytes(), fb[k].read_bytes()
        if a == b:
            continue
        if k.name == "results.json":
            diffs = _json_diff(json.loads(a), json.loads(b))
            lines.append(f"differs: {k} ({len(diffs)} JSON paths)")
            lines += [f"    {d}" for d in diffs[:20]]
        else:
            lines.append(f"differs: {k}")
    return lines


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__)
        return 2
    root_a, root_b = Path(argv[0]), Path(argv[1])
    status = 0
    for run in sorted(p.name for p in root_a.iterdir() if p.is_dir()):
        lines = compare(root_a / run, root_b / run) if (root_b / run).is_dir() else ["missing"]
        print(f"{run}: {'identical' if not lines else f'{len(lines)} difference(s)'}")
        for line in lines:
            print(f"  {line}")
        status |= bool(lines)
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
