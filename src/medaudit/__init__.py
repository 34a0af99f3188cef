"""medaudit: audit how medical-imaging AI models are evaluated.

``medaudit.audit(df, *, spec=None, **options)`` runs an audit from Python and returns a
:class:`medaudit.Audit` (tables, claims, the portability matrix, provenance); ``medaudit
audit SPEC --out DIR`` does the same from the command line.  ``medaudit.port(source, local)``
re-evaluates a published audit's claims on a site's data (``medaudit port``).  The statistics core lives in
:mod:`medaudit.stats` (numpy and scipy only).  Nothing heavy is imported here: the entry
points are imported when first used.
"""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"

__all__ = ["__version__", "audit", "Audit", "port"]


def __getattr__(name: str) -> Any:
    # lazy: `import medaudit` stays cheap, and `medaudit.audit` is the callable package
    if name == "audit":
        import medaudit.audit as audit

        return audit
    if name == "port":  # medaudit.port(source, local): the callable module of the receiving site
        import medaudit.port as port

        return port
    if name == "Audit":
        from medaudit.api import Audit

        return Audit
    raise AttributeError(f"module 'medaudit' has no attribute {name!r}")
