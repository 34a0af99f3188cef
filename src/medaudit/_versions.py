"""The one record of library versions that can move a number (results.json, model cards, sidecars)."""

from __future__ import annotations

import importlib
import platform

__all__ = ["versions", "AUDIT_MODULES"]

#: what moves an audit's numbers: the statistics stack and the table/spec readers
AUDIT_MODULES = ("numpy", "scipy", "statsmodels", "pandas", "pyarrow", "pydantic", "yaml")


def versions(*modules: str | tuple[str, str], interpreter: bool = True) -> dict[str, str]:
    """``{name: version}`` of medaudit, Python and each importable module (missing ones left out).

    A module is named by its import name, or by a ``(key, import name)`` pair where the
    record uses another name (``("Pillow", "PIL")``).  ``interpreter=False`` leaves out
    medaudit and Python (a sub-record inside a larger one).
    """
    from medaudit import __version__

    out = {"medaudit": __version__, "python": platform.python_version()} if interpreter else {}
    for mod in modules:
        key, name = mod if isinstance(mod, tuple) else (mod, mod)
        try:
            out[key] = importlib.import_module(name).__version__
        except (ImportError, AttributeError):  # optional extras may be absent
            continue
    return out
