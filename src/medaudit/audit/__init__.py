"""Running a whole audit: load the spec and the table, run the blocks, build claims, write outputs.

The package itself is callable: ``medaudit.audit(df, *, spec=None, **options)`` is the Python
entry point (:func:`medaudit.api.audit`), and its submodules (``medaudit.audit.spec``,
``medaudit.audit.run``, ...) are the machinery behind it and behind ``medaudit audit``.
"""

import sys
import types

from medaudit.audit.context import build_context

__all__ = ["build_context"]


_PACKAGE_DOC = __doc__


class _CallableModule(types.ModuleType):
    """``medaudit.audit`` is both this package and the function ``medaudit.api.audit``."""

    def __call__(self, data=None, /, *, spec=None, **options):
        from medaudit.api import audit

        return audit(data, spec=spec, **options)

    @property
    def __doc__(self) -> str:  # type: ignore[override]
        # help(medaudit.audit) is asked of the function a user calls: its parameters and
        # example first, then the package (probe finding: it showed the package alone)
        import inspect

        from medaudit.api import audit

        return (f"medaudit.audit(data=None, /, *, spec=None, **options)\n\n"
                f"{inspect.cleandoc(audit.__doc__ or '')}\n\n"
                f"The package medaudit.audit\n{'-' * 26}\n{_PACKAGE_DOC}")


sys.modules[__name__].__class__ = _CallableModule
