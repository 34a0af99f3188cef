"""One local Ray instance for every Ray test (2 CPUs, no dashboard, no external services)."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def ray_session():
    ray = pytest.importorskip("ray", reason="the optional extra medaudit[ray] is not installed")
    if ray.is_initialized():  # pragma: no cover - someone else left one running
        ray.shutdown()
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    yield ray
    ray.shutdown()
