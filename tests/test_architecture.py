"""The package's imports follow the layers of docs/architecture.md, with no import loop.

Every module under ``src/medaudit`` is parsed with :mod:`ast` and every import it makes is
collected — at module level, inside functions (lazy imports) and under ``TYPE_CHECKING`` —
so a lazy upward import counts as much as an eager one.  An import is resolved to the module
it names (``from medaudit.stats import _kernels`` is ``medaudit.stats._kernels``; ``from
medaudit.stats import roc_auc`` is the package ``medaudit.stats``).  Two checks:

* **Layers**: a module may import only modules of its own layer or of lower layers
  (:data:`LAYERS`, the table in docs/architecture.md, lowest first);
* **No loops**: the graph of imports between modules has no cycle.  A package's
  ``__init__`` re-exporting its own submodules is part of the graph too, so a submodule that
  imports a name from its own package's ``__init__`` is a loop.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "medaudit"
ARCHITECTURE = Path(__file__).resolve().parents[1] / "docs" / "architecture.md"

#: (layer, module prefixes) from the bottom up; a module's layer is that of its longest
#: matching prefix.  Keep in step with the table in docs/architecture.md (a test checks).
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("base", ("medaudit", "medaudit.exceptions", "medaudit._validation", "medaudit._versions",
              "medaudit._words", "medaudit.progress")),
    ("stats", ("medaudit.stats",)),
    ("io", ("medaudit.io",)),
    ("data", ("medaudit.datasets", "medaudit.imaging", "medaudit.simulate")),
    ("domain", ("medaudit.labels", "medaudit.agreement")),
    ("models", ("medaudit.adapters", "medaudit.train")),
    ("backends", ("medaudit.backends",)),
    ("blocks", ("medaudit.blocks",)),
    ("spec", ("medaudit.audit.spec", "medaudit.audit.defaults", "medaudit.audit.outcome")),
    ("report", ("medaudit.report",)),
    ("audit", ("medaudit.audit",)),
    ("api", ("medaudit.api", "medaudit.port", "medaudit.monitor")),
    ("cli", ("medaudit.cli", "medaudit.__main__")),
)
#: modules a lower layer may name for a reason stated here
ALLOWED_UPWARD: dict[tuple[str, str], str] = {}
#: the public entry points, re-exported lazily (a function-level import on first use) by the
#: package root and by the callable ``medaudit.audit`` package: ``medaudit.audit(df)`` and
#: ``medaudit.Audit``.  They are left out of both checks because nothing inside the package
#: reaches them through those names (a test says so); every other edge counts.
ENTRY_POINTS: dict[tuple[str, str], str] = {
    ("medaudit", "medaudit.audit"): "medaudit.audit(df): the callable audit package",
    ("medaudit", "medaudit.api"): "medaudit.Audit, the result of medaudit.audit(df)",
    ("medaudit.audit", "medaudit.api"): "medaudit.audit(df) hands the call to medaudit.api.audit",
    ("medaudit", "medaudit.port"): "medaudit.port(source, local): the callable port module",
}


def _module_name(path: Path) -> str:
    rel = path.relative_to(SRC.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


MODULES = {_module_name(p): p for p in SRC.rglob("*.py")}
PACKAGES = {_module_name(p) for p in SRC.rglob("__init__.py")}


def _resolve(name: str) -> str | None:
    """The module ``name`` refers to (itself, or the nearest enclosing package we have)."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def _imports(module: str) -> set[str]:
    tree = ast.parse(MODULES[module].read_text(encoding="utf-8"))
    package = module if module in PACKAGES else module.rpartition(".")[0]
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name.startswith("medaudit"):
                    out.add(_resolve(a.name))
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative import
                base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                target = f"{base}.{node.module}" if node.module else base
            else:
                target = node.module or ""
            if not target.startswith("medaudit"):
                continue
            for a in node.names:
                sub = f"{target}.{a.name}"
                out.add(sub if sub in MODULES else _resolve(target))
    out.discard(None)
    out.discard(module)
    return out


GRAPH = {m: {d for d in _imports(m) if (m, d) not in ENTRY_POINTS} for m in MODULES}


def layer_of(module: str) -> int:
    best, rank = -1, -1
    for i, (_, prefixes) in enumerate(LAYERS):
        for p in prefixes:
            if (module == p or module.startswith(p + ".")) and len(p) > best:
                best, rank = len(p), i
    if rank < 0:
        raise AssertionError(f"module {module} is in no layer of LAYERS")
    return rank


def test_every_module_has_a_layer():
    for m in MODULES:
        layer_of(m)


def test_no_import_runs_upward():
    bad = []
    for m, deps in GRAPH.items():
        for d in deps:
            if d == "medaudit":  # the package root holds only __version__ (layer base)
                continue
            if layer_of(d) > layer_of(m) and (m, d) not in ALLOWED_UPWARD:
                bad.append(f"{m} ({LAYERS[layer_of(m)][0]}) imports {d} ({LAYERS[layer_of(d)][0]})")
    assert not bad, "imports against the layer order:\n" + "\n".join(sorted(bad))


def _cycles() -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in GRAPH.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(GRAPH):
        if v not in index:
            visit(v)
    return out


def test_nothing_inside_reaches_the_entry_points_through_the_root():
    """``from medaudit import audit``/``Audit`` inside the package would hide a loop that the
    ENTRY_POINTS exemption lets through; only code outside the package uses them."""
    bad = []
    for m, path in MODULES.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module == "medaudit" and not node.level:
                names = {a.name for a in node.names} & {"audit", "Audit"}
                if names and m != "medaudit":
                    bad.append(f"{m}: from medaudit import {sorted(names)}")
    assert not bad, "\n".join(bad)
    for (a, b) in ENTRY_POINTS:
        assert b in _imports(a), f"stale exemption {a} -> {b}"


def test_no_import_loops():
    loops = _cycles()
    assert not loops, "import loops between modules:\n" + "\n".join(" <-> ".join(c) for c in loops)


def test_the_documented_layers_are_these():
    """docs/architecture.md lists the same layers, in the same order, as this test checks."""
    text = ARCHITECTURE.read_text(encoding="utf-8")
    rows = re.findall(r"^\|\s*(\d+)\s*\|\s*`?([a-z]+)`?\s*\|\s*([^|]+)\|", text, flags=re.M)
    assert [(int(n), name) for n, name, _ in rows] == [(i, n) for i, (n, _) in enumerate(LAYERS)]
    for (_, name, mods), (_, prefixes) in zip(rows, LAYERS, strict=True):
        documented = set(re.findall(r"`(medaudit[\w.]*)`", mods))
        assert documented == set(prefixes), name


@pytest.mark.parametrize("probe", ["stats", "blocks"])
def test_the_checker_sees_lazy_and_upward_imports(probe, tmp_path):
    """The walker has power: a lazy upward import in a function is found."""
    code = "def f():\n    from medaudit.cli.main import main\n    return main\n"
    tree = ast.parse(code)
    found = [n for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
    assert found and found[0].module == "medaudit.cli.main"
    assert layer_of("medaudit.cli.main") > layer_of(f"medaudit.{probe}")
