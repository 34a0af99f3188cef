"""One local Ray instance for every Ray test (2 CPUs, no dashboard, no external services)."""

from __future__ import annotations

import warnings

import pytest


@pytest.fixture(scope="session")
def ray_session():
    ray = pytest.importorskip("ray", reason="the optional extra medaudit[ray] is not installed")
    if ray.is_initialized():  # pragma: no cover - someone else left one running
        ray.shutdown()
    # Ray starts its helper processes by fork + exec; once JAX is imported (by an earlier
    # test) its at-fork hook warns about forking a multithreaded process, which the suite's
    # RuntimeWarning-as-error filter turns into an unraisable exception
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "os.fork", RuntimeWarning)
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
                 configure_logging=False)
    yield ray
    ray.shutdown()
