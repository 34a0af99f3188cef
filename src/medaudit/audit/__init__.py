"""Running a whole audit: load the spec and the table, run the blocks, build claims, write outputs."""

from medaudit.audit.context import build_context

__all__ = ["build_context"]
