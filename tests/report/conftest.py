"""One small simulated audit per test process, shared by the report tests that only read it."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def small_audit(tmp_path_factory):
    """``(outcome, folder)`` of the small simulated audit, written with its report.

    Read only: a test that edits the page or the results works on a copy in its own
    ``tmp_path``.  ``test_html.test_render_is_deterministic`` runs the audit again to
    compare the bytes.
    """
    from tests.report.test_html import build_small_audit

    out = tmp_path_factory.mktemp("small_audit") / "audit"
    return build_small_audit(out), out
