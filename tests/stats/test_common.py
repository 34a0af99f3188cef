"""Shared helpers of the public metrics (medaudit.stats._common): where warnings point.

A warning raised inside the statistics core must name the user's line, however deep the
call: a direct call, a call through a helper of the user's, and a public function that
calls another one internally all point at the first frame outside ``medaudit/stats``.
"""

from __future__ import annotations

import inspect
import warnings

import numpy as np

from medaudit.exceptions import DegenerateDataWarning, UndefinedMetricWarning
from medaudit.stats import _common, bootstrap_ci, bootstrap_metrics, paired_bootstrap, roc_auc

Y = np.array([0, 0, 0, 0, 0, 0, 1.0])  # one positive: ordinary resamples lose it often
S = np.linspace(0.1, 0.9, 7)


def _caught(fn, category):
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        fn()
    hits = [w for w in rec if issubclass(w.category, category)]
    assert hits, f"no {category.__name__}"
    return hits[0]


def _body_line(fn) -> int:
    """The line of a one-statement function's body."""
    return inspect.getsourcelines(fn)[1] + 1


def test_direct_bootstrap_metrics_call_is_named():
    def call():
        bootstrap_metrics(Y, S, metrics=["roc_auc"], n_resamples=30, rng=0)
    w = _caught(call, DegenerateDataWarning)
    assert (w.filename, w.lineno) == (__file__, _body_line(call))


def test_nested_public_calls_name_the_outer_caller():
    def call():
        bootstrap_ci(Y, S, n_resamples=30, rng=0)  # which calls bootstrap_metrics
    w = _caught(call, DegenerateDataWarning)
    assert (w.filename, w.lineno) == (__file__, _body_line(call))

    def paired():
        paired_bootstrap(Y, {"a": S, "b": S[::-1]}, n_resamples=30, rng=0)
    w = _caught(paired, DegenerateDataWarning)
    assert (w.filename, w.lineno) == (__file__, _body_line(paired))


def test_a_helper_of_the_user_is_the_frame_named():
    def helper():
        return roc_auc([1, 1], [0.2, 0.4])  # the warning names this line
    w = _caught(helper, UndefinedMetricWarning)
    assert (w.filename, w.lineno) == (__file__, _body_line(helper))


def test_python_312_path_passes_the_stats_directory_to_skip_file_prefixes(monkeypatch):
    """On Python >= 3.12 the frames are skipped by ``skip_file_prefixes``; this venv is
    3.11, so the call itself is checked: the prefix, and no fixed stacklevel."""
    calls = []
    monkeypatch.setattr(_common, "_SKIP_PREFIXES", True)
    monkeypatch.setattr(_common.warnings, "warn", lambda *a, **k: calls.append((a, k)))
    _common.warn("x", UserWarning)
    assert calls == [(("x", UserWarning), {"skip_file_prefixes": (_common.STATS_DIR,)})]
    assert _common.STATS_DIR.endswith(("medaudit/stats/", "medaudit\\stats\\"))


_FAKE = """
import warnings
from medaudit.stats._common import stacklevel_outside
def warn_like():
    warnings.warn("w", UserWarning, stacklevel=stacklevel_outside(PREFIX))
def middle():
    [warn_like() for _ in range(1)]  # a frame of its own on 3.11, inlined on 3.12
def entry():
    middle()
"""


def test_stacklevel_outside_counts_the_frames_under_the_prefix():
    """The 3.11 path counts frames at run time, so an extra internal call or an inlined
    comprehension cannot shift it: a fake module under a fake prefix calls through three
    frames (and a comprehension), and the warning still names this test's line."""
    ns = {"PREFIX": "/fake/medaudit/stats/"}
    exec(compile(_FAKE, "/fake/medaudit/stats/mod.py", "exec"), ns)

    def call():
        ns["entry"]()
    w = _caught(call, UserWarning)
    assert (w.filename, w.lineno) == (__file__, _body_line(call))


def test_resampling_checks_have_one_home():
    """``check_n_resamples``/``check_batch`` come from ``stats._common`` (the validation layer's
    functions, not copies), and no module imports the old private names of ``stats.bootstrap``."""
    import ast
    import pathlib

    import medaudit
    from medaudit import _validation

    assert _common.check_n_resamples is _validation.check_n_resamples
    assert _common.check_batch is _validation.check_batch
    root = pathlib.Path(medaudit.__file__).parent
    offenders = []
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module == "medaudit.stats.bootstrap":
                offenders += [f"{path.relative_to(root)}: {a.name}" for a in node.names
                              if a.name in ("_n_resamples", "_batch")]
    assert offenders == []
    assert _common.check_n_resamples(3) == 3 and _common.check_batch(None) is None
