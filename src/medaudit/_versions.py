"""The one record of library versions that can move a number (results.json, model cards, sidecars)."""

from __future__ import annotations

import importlib
import platform
import sys
from importlib import metadata

__all__ = ["versions", "AUDIT_MODULES"]

#: what moves an audit's numbers: the statistics stack and the table/spec readers
AUDIT_MODULES = ("numpy", "scipy", "statsmodels", "pandas", "pyarrow", "pydantic", "yaml")

#: import name -> distribution name, where they differ (for the metadata lookup below)
_DISTRIBUTIONS = {"yaml": "PyYAML", "PIL": "Pillow", "sklearn": "scikit-learn"}


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
        version = _version(name)
        if version is not None:
            out[key] = version
    return out


def _version(name: str) -> str | None:
    """The version of module ``name``, or None where it is not installed.

    A module the run has imported reports its own ``__version__``; one it has not is
    looked up in the installed metadata rather than imported only to be asked (importing
    statsmodels, with the scipy.stats it pulls in, cost an audit that never uses it about
    a second).  The module is imported only where the metadata does not know it.
    """
    loaded = sys.modules.get(name)
    if loaded is not None and getattr(loaded, "__version__", None) is not None:
        return str(loaded.__version__)
    try:
        return metadata.version(_DISTRIBUTIONS.get(name, name))
    except metadata.PackageNotFoundError:
        pass
    try:
        return str(importlib.import_module(name).__version__)
    except (ImportError, AttributeError):  # optional extras may be absent
        return None
