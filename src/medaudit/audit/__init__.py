"""Running a whole audit: load the spec and the table, run the blocks, build claims, write outputs.

The package itself is callable: ``medaudit.audit(df, *, spec=None, **options)`` is the Python
entry point (:func:`medaudit.api.audit`), and its submodules (``medaudit.audit.spec``,
``medaudit.audit.run``, ...) are the machinery behind it and behind ``medaudit audit``.
"""

import sys
import types

from medaudit.audit.context import build_context

__all__ = ["build_context"]


class _CallableModule(types.ModuleType):
    """``medaudit.audit`` is both this package and the function ``medaudit.api.audit``."""

    def __call__(self, data=None, /, *, spec=None, **options):
        from medaudit.api import audit

        return audit(data, spec=spec, **options)


sys.modules[__name__].__class__ = _CallableModule
