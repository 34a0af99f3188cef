"""Sub-commands of ``medaudit`` for training (registered by :func:`medaudit.cli.main.build_parser`).

``medaudit train supervised SPEC.yaml --out DIR [--resume]`` trains the supervised
ResNet-50 source model of paper 000 (M0.12) and, when the spec names an exclusion list,
the model retrained without the overlap-screen images (M0.13).  torch is imported only
when the command runs.
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

__all__ = ["register"]


class _Progress:
    """Epoch lines on stderr; a rich batch bar on a terminal; nothing with --quiet."""

    def __init__(self, quiet: bool, verbose: bool):
        self.quiet, self.verbose, self.t0 = quiet, verbose, time.perf_counter()
        self.bar: Any = None
        self.task: Any = None
        if not quiet and sys.stderr.isatty():
            try:
                from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn
            except ImportError:  # pragma: no cover - rich is part of the audit extra
                pass
            else:
                self.bar = Progress(TextColumn("[bold]medaudit[/]"), BarColumn(),
                                    MofNCompleteColumn(), TextColumn("{task.description}"),
                                    transient=True)

    def _line(self, text: str) -> None:
        msg = f"medaudit: {text} (t = {time.perf_counter() - self.t0:.1f} s)"
        if self.bar is not None:
            self.bar.console.print(msg)
        else:
            print(msg, file=sys.stderr, flush=True)

    def __call__(self, e) -> None:
        if self.quiet:
            return
        head = f"{e.model} seed {e.seed}"
        if e.kind == "seed_start":
            self._line(f"{head}: training (at most {e.max_epochs} epochs)")
        elif e.kind == "seed_reused":
            self._line(f"{head}: already finished in this run directory; reusing its predictions")
        elif e.kind == "epoch_start" and self.bar is not None:
            if self.task is None:
                self.bar.start()
                self.task = self.bar.add_task("", total=e.n_batches)
            self.bar.update(self.task, completed=0, total=e.n_batches,
                            description=f"{head} epoch {e.epoch}/{e.max_epochs}")
        elif e.kind == "batch":
            if self.bar is not None and self.task is not None:
                self.bar.update(self.task, completed=e.batch)
            elif self.verbose:
                self._line(f"{head} epoch {e.epoch}: batch {e.batch}/{e.n_batches}")
        elif e.kind == "epoch_end":
            m = e.metrics
            self._line(f"{head} epoch {e.epoch}/{e.max_epochs}: train loss {m['train_loss']:.4f}, "
                       f"selection AUROC {m['selection_auroc']:.4f} (best "
                       f"{m['best_selection_auroc']:.4f} at epoch {m['best_epoch']})")
        elif e.kind == "seed_end":
            m = e.metrics
            self._line(f"{head}: done; best epoch {m['best_epoch']} of {m['epochs_run']}"
                       f"{' (early stop)' if m['stopped_early'] else ''}")

    def close(self) -> None:
        if self.bar is not None and self.task is not None:
            self.bar.stop()


def _cmd_supervised(args: argparse.Namespace) -> int:
    from pathlib import Path

    from medaudit.train.spec import load_supervised_spec
    from medaudit.train.supervised import train_supervised

    spec, base = load_supervised_spec(args.spec)
    progress = _Progress(args.quiet, args.verbose)
    try:
        res = train_supervised(spec, out=Path(args.out), base_dir=base, resume=args.resume,
                               callback=progress)
    finally:
        progress.close()
    if not args.quiet:
        models = sorted(res.scores["model"].unique())
        print(f"wrote {args.out}/\n"
              f"  scores.csv / .parquet  long ScoreTable: {len(res.scores)} rows, models {models}, "
              f"seeds {list(spec.seeds)}\n"
              f"  audit.yaml             an audit spec for these scores "
              f"(medaudit audit {args.out}/audit.yaml --out DIR)\n"
              f"  model_cards.json       initial weights, transforms, device, autocast, versions\n"
              f"  history.csv            per-epoch loss and selection AUROC (timings.csv: seconds)\n"
              f"  split.csv              the fixed source split"
              + ("\n  exclusion.csv          images removed per cohort (Table 19)"
                 if res.exclusion is not None else "")
              + "\n  runs/                  checkpoints, per-seed history and predictions")
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``medaudit train supervised`` to the ``medaudit`` parser."""
    from medaudit.cli._help import examples

    t = sub.add_parser(
        "train", help="train source models (supervised ResNet-50, paper 000)",
        description="Train source models. `medaudit train supervised --help` for details.",
        epilog=examples(("medaudit train supervised examples/kermany_supervised.yaml --out run/",
                         "a CPU smoke run on real images"),
                        ("medaudit train supervised spec.yaml --out run/ --resume",
                         "continue an interrupted run")))
    tsub = t.add_subparsers(dest="train_command", required=True, metavar="SUBCOMMAND",
                            title="subcommands")
    s = tsub.add_parser(
        "supervised", help="ResNet-50 source model over seeds, optionally retrained after "
                           "overlap exclusion",
        description="Train the supervised ResNet-50 source model of paper 000 (M0.12) over its\n"
                    "seeds on one fixed split and, when the spec names an exclusion list, the model\n"
                    "retrained without the overlap-screen images (M0.13). Writes scores, an audit\n"
                    "spec for them, model cards and per-epoch history; --resume continues a run.",
        epilog=examples(("medaudit train supervised spec.yaml --out run/", "train every seed"),
                        ("medaudit train supervised spec.yaml --out run/ --resume",
                         "continue an interrupted run"),
                        ("medaudit audit run/audit.yaml --out audit/", "then audit the scores")))
    s.add_argument("spec", help="training spec (YAML); see examples/kermany_supervised.yaml")
    s.add_argument("--out", required=True, help="run directory (new, or existing with --resume)")
    s.add_argument("--resume", action="store_true",
                   help="continue an interrupted run in --out from its last completed epochs")
    s.add_argument("--quiet", action="store_true", help="print nothing on success")
    s.add_argument("--verbose", action="store_true", help="also log every batch")
    s.set_defaults(func=_cmd_supervised)
