"""The default backend: every cell in order, in this process."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

__all__ = ["LocalBackend"]


class LocalBackend:
    """Run cells one after another in the calling process (no workers, no copies).

    Examples
    --------
    >>> with LocalBackend() as b:
    ...     b.map(abs, [-2, 3])
    [2, 3]
    """

    name = "local"

    def map(self, fn: Callable[[Any], Any], items: Iterable[Any]) -> list[Any]:
        """``[fn(x) for x in items]``; an exception in a cell propagates unchanged."""
        return [fn(x) for x in items]

    def describe(self) -> dict[str, Any]:
        """What ran the cells (for the log; never written into result tables)."""
        return {"backend": self.name, "workers": 1}

    def close(self) -> None:
        """Nothing to release."""

    def __enter__(self) -> LocalBackend:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
