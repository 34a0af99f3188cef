"""The port and monitor reports in a real browser (headless Chromium): they draw, open on the
claims table with the site's verdicts, and request nothing but the page.

Skipped only when no Chromium binary is installed (Debian: ``apt-get install -y chromium``);
the helpers are those of tests/report/test_browser.py.
"""

from __future__ import annotations

import re

import pandas as pd
import pytest

import medaudit
from tests.port._source import LOCAL_SPEC, claims_file, source_audit  # noqa: F401
from tests.report.test_browser import CHROMIUM, _colours, _dump_dom, _load_served, _screenshot

pytestmark = pytest.mark.skipif(
    CHROMIUM is None, reason="no chromium binary on PATH (Debian: apt-get install -y chromium)")


@pytest.fixture(scope="module")
def port_dir(claims_file, tmp_path_factory):  # noqa: F811
    return medaudit.port(claims_file, spec=LOCAL_SPEC).write(tmp_path_factory.mktemp("pb") / "port")


def test_port_report_opens_on_the_claims_table(port_dir, tmp_path):
    url = (port_dir / "report.html").resolve().as_uri()
    n, white = _colours(_screenshot(tmp_path, url, "port"))
    assert n > 20 and not white, (n, white)
    dom = _dump_dom(tmp_path, url)
    main = dom[dom.index("<main>"):]
    assert main.index('id="claims"') < main.index('id="provenance"')
    first_table = re.search(r'<table id="([^"]+)"', main).group(1)
    assert first_table == "port-claims"
    rows = re.findall(r"<tr><td class=\"claim_id\">(\w+)</td>", dom)
    assert rows[:8] == [f"D0{i}" for i in range(1, 9)]
    for verdict in ("holds", "does not hold", "reversed", "unresolved"):
        assert f">{verdict}</span>" in dom, verdict
    assert "Source audit" in dom and "Local data" in dom and "Simulated data." in dom


def test_port_report_requests_nothing_but_itself(port_dir, tmp_path):
    log, from_page, console, dom, port = _load_served(port_dir, tmp_path)
    assert 'id="port-claims"' in dom
    assert [p for _, p in log] == ["/report.html"], log
    assert from_page == [f"http://127.0.0.1:{port}/report.html"], from_page
    assert not console, console


@pytest.fixture(scope="module")
def monitor_dir(claims_file, tmp_path_factory):  # noqa: F811
    from medaudit.monitor import monitor
    from medaudit.simulate import simulate_paper000

    t = pd.DataFrame(simulate_paper000(rng=5, scale=0.5)["table"])
    t = t[(t["cohort"] == "montgomery") & (t["prompt"] == "clinical")].drop(columns=["split"])
    t = t.sort_values(["model", "image_id"])
    t["period"] = t.groupby("model").cumcount().mod(3).map({0: "2026-01", 1: "2026-02", 2: "2026-03"})
    return monitor(claims_file, t, primary_prompt="clinical").write(
        tmp_path_factory.mktemp("mb") / "monitor")


def test_monitor_report_opens_on_the_claims_then_series_and_drift(monitor_dir, tmp_path):
    url = (monitor_dir / "report.html").resolve().as_uri()
    n, white = _colours(_screenshot(tmp_path, url, "monitor"))
    assert n > 20 and not white, (n, white)
    dom = _dump_dom(tmp_path, url)
    main = dom[dom.index("<main>"):]
    ids = [main.index(f'id="{i}"') for i in ("claims", "changes", "series", "drift", "provenance")]
    assert ids == sorted(ids)
    assert re.search(r'<table id="([^"]+)"', main).group(1) == "port-claims"
    assert main.count('src="data:image/png;base64,') >= 1
    log, from_page, console, _, port = _load_served(monitor_dir, tmp_path)
    assert [p for _, p in log] == ["/report.html"] and not console, (log, console)
