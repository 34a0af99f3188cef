"""The ``medaudit`` argument parser class and the shape of every command's help.

:class:`CommandParser` is ``argparse`` as people expect it: an unknown flag is reported as
unknown, with the closest option (``--output`` -> ``did you mean --out?``), before a missing
required option; a misspelt command gets the closest command; every usage error is one line.
:func:`examples` writes the ``examples:`` epilog each command's ``--help`` ends with.
"""

from __future__ import annotations

import argparse
import contextlib
import difflib
from collections.abc import Iterator, Sequence
from typing import Any

__all__ = ["CommandParser", "examples"]


@contextlib.contextmanager
def _required(actions: list[argparse.Action]) -> Iterator[None]:
    """Mark ``actions`` required while help is formatted (they are checked after the parse)."""
    for a in actions:
        a.required = True
    try:
        yield
    finally:
        for a in actions:
            a.required = False


class CommandParser(argparse.ArgumentParser):
    """``argparse`` as people expect it: an unknown flag is reported as unknown (with the
    closest option), even when a required option is missing too, and a usage error is one
    line naming the command and where its help is.

    argparse checks required options while it reads the command line, so ``medaudit audit
    spec.yaml --output x`` used to say "required: --out" and never mention ``--output``.
    Here required options are checked after the line is read and its leftovers reported.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", argparse.RawDescriptionHelpFormatter)
        super().__init__(*args, **kwargs)

    def parse_known_args(self, args: Sequence[str] | None = None,  # type: ignore[override]
                         namespace: argparse.Namespace | None = None
                         ) -> tuple[argparse.Namespace, list[str]]:
        later = [a for a in self._actions if a.required and a.option_strings]
        for a in later:
            a.required = False
        self._later = later  # --help during the parse still shows them as required
        try:
            ns, extras = super().parse_known_args(args, namespace)
        finally:
            for a in later:
                a.required = True
            self._later = []
        if extras:
            self.error(self._unrecognized(extras))
        missing = ["/".join(a.option_strings) for a in later if getattr(ns, a.dest, None) is None]
        if missing:
            self.error(f"the following arguments are required: {', '.join(missing)}")
        return ns, extras

    def format_usage(self) -> str:
        with _required(getattr(self, "_later", [])):
            return super().format_usage()

    def format_help(self) -> str:
        with _required(getattr(self, "_later", [])):
            return super().format_help()

    def _unrecognized(self, extras: list[str]) -> str:
        flags = [x for x in extras if x.startswith("-") and x != "-"]
        if not flags:
            return f"unrecognized argument {extras[0]!r} (this command takes no more arguments)"
        flag = flags[0].split("=", 1)[0]
        known = {o.lstrip("-"): o for a in self._actions for o in a.option_strings if o.startswith("--")}
        close = difflib.get_close_matches(flag.lstrip("-"), list(known), n=1, cutoff=0.6)
        return f"unrecognized argument {flag}" + (f" (did you mean {known[close[0]]}?)" if close else "")

    def error(self, message: str) -> Any:  # type: ignore[override]
        import re

        from medaudit.io.messages import one_line

        bad = re.match(r"argument COMMAND: invalid choice: '(.*?)'", message)
        if bad:  # a misspelt command: name the closest one rather than list them all
            names = [n for a in self._actions if isinstance(a, argparse._SubParsersAction)
                     for n in a.choices]
            close = difflib.get_close_matches(bad.group(1), names, n=1, cutoff=0.6)
            message = (f"unknown command {bad.group(1)!r}" + (f" (did you mean {close[0]!r}?)" if close
                       else f"; the commands are {', '.join(names)}"))

        self.exit(2, f"{self.prog}: error: {one_line(message, limit=2000)}; `{self.prog} --help` "
                     "lists every option\n")


def output_flags(parser: argparse.ArgumentParser) -> None:
    """``--quiet`` and ``--verbose``, worded alike on every command (one or the other)."""
    g = parser.add_mutually_exclusive_group()
    g.add_argument("--quiet", action="store_true", help="print nothing on success")
    g.add_argument("--verbose", action="store_true", help="log progress to stderr")


def examples(*lines: tuple[str, str]) -> str:
    """An ``examples:`` epilog: each command line with what it does."""
    width = max(len(cmd) for cmd, _ in lines) + 2
    return "examples:\n" + "\n".join(f"  {cmd:<{width}}{what}".rstrip() for cmd, what in lines)
