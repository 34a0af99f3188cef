"""Write one benchmark's printed report into its own section of BENCHMARKS.md.

Each script prints Markdown; with ``--write`` its output goes between
``<!-- NAME:start -->`` and ``<!-- NAME:end -->`` markers (appended when absent), so
the scripts can be rerun independently without clobbering each other's results.
"""

from __future__ import annotations

import contextlib
import io
import os
import sys
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def replace_section(path: Path, name: str, text: str) -> None:
    start, end = f"<!-- {name}:start -->", f"<!-- {name}:end -->"
    doc = path.read_text(encoding="utf-8") if path.exists() else ""
    block = f"{start}\n{text.rstrip()}\n{end}"
    if start in doc and end in doc:
        doc = doc[:doc.index(start)] + block + doc[doc.index(end) + len(end):]
    else:
        doc = doc.rstrip() + "\n\n" + block + "\n"
    tmp = path.with_suffix(".md.tmp")
    tmp.write_text(doc, encoding="utf-8")
    os.replace(tmp, path)


def run_and_record(name: str, title: str, main: Callable[[list[str]], object]) -> None:
    """Run ``main(argv)``; with ``--write`` in argv, also record its output in BENCHMARKS.md."""
    argv = sys.argv[1:]
    write = "--write" in argv
    argv = [a for a in argv if a != "--write"]
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        main(argv)
    out = buf.getvalue()
    sys.stdout.write(out)
    if write:
        argv = [*argv, "--write"]
        replace_section(ROOT / "BENCHMARKS.md", name,
                        f"## {title}\n\nCommand: `python benchmarks/{name}.py {' '.join(argv)}`"
                        f"\n\n```\n{out.rstrip()}\n```" if not out.lstrip().startswith("#")
                        else f"## {title}\n\nCommand: `python benchmarks/{name}.py "
                             f"{' '.join(argv)}`\n\n{out.lstrip().split(chr(10), 1)[1]}")
