"""Shared test configuration: a deterministic hypothesis profile and a headless matplotlib.

The default hypothesis profile copies scipy's deterministic one (``derandomize=True``,
no example database, no deadline), so a run is reproducible and a failure prints the blob
needed to replay it.  For local bug hunting set ``MEDAUDIT_HYPOTHESIS_PROFILE=medaudit-random``
to draw fresh examples on every run.
"""

from __future__ import annotations

import importlib.util
import os

from hypothesis import settings

# the scripts that made the committed reference values import their own tools (R is called
# from .R files; confseq from a .py one): they are run by hand, never collected as tests
collect_ignore_glob = ["reference/generate_*.py"]

settings.register_profile(
    "medaudit",
    derandomize=True,
    database=None,
    deadline=None,
    print_blob=True,
    max_examples=100,
)
settings.register_profile(
    "medaudit-random",
    derandomize=False,
    database=None,
    deadline=None,
    print_blob=True,
    max_examples=100,
)
settings.load_profile(os.environ.get("MEDAUDIT_HYPOTHESIS_PROFILE", "medaudit"))

if importlib.util.find_spec("matplotlib") is not None:  # figures are optional
    import matplotlib

    matplotlib.use("Agg")


def pytest_collection_modifyitems(config, items):
    """Modules holding a test marked ``slow`` (tens of seconds) run first.

    pytest-xdist hands each worker a contiguous share and idle workers steal from the
    others' tails, so a long test collected late leaves one worker running it alone at the
    end.  Whole modules move (order within a module kept), so module-scoped fixtures are
    still set up once per worker.
    """
    slow = {item.module.__name__ for item in items
            if item.get_closest_marker("slow") is not None and getattr(item, "module", None)}
    items.sort(key=lambda item: getattr(item, "module", None) is None
               or item.module.__name__ not in slow)
