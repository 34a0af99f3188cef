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
