"""``report.html`` in a real browser (headless Chromium): it draws, its DOM holds the matrix
and every block section, its script runs, and loading it requests nothing but the page.

Skipped only when no Chromium binary is installed (Debian: ``apt-get install -y chromium``).
Set ``MEDAUDIT_SCREENSHOT_DIR`` to keep the screenshots for a look.
"""

from __future__ import annotations

import http.server
import json
import os
import re
import shutil
import subprocess
import threading
from pathlib import Path

import pytest
import yaml

from medaudit.audit.run import audit, write_outcome
from medaudit.audit.spec import AuditSpec

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
KWANG = ROOT.parent / "shared" / "data" / "tb_cross_cohort_predictions_kwang311"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")

pytestmark = pytest.mark.skipif(
    CHROMIUM is None, reason="no chromium binary on PATH (Debian: apt-get install -y chromium)")

#: quiet, hermetic headless Chromium: no background traffic, no first-run pages
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-default-apps", "--disable-sync",
         "--disable-extensions", "--no-first-run", "--no-default-browser-check",
         "--disable-client-side-phishing-detection", "--disable-domain-reliability",
         "--disable-breakpad", "--no-pings", "--safebrowsing-disable-auto-update",
         "--disable-component-extensions-with-background-pages", "--disable-field-trial-config",
         "--disable-features=Translate,OptimizationHints,MediaRouter,AutofillServerCommunication,"
         "NetworkTimeServiceQuerying,CertificateTransparencyComponentUpdater,"
         "InterestFeedContentSuggestions,PrivacySandboxSettings4",
         "--metrics-recording-only", "--mute-audio", "--hide-scrollbars")


def _chromium(tmp: Path, *args: str) -> subprocess.CompletedProcess:
    profile = tmp / f"profile-{len(list(tmp.glob('profile-*')))}"
    return subprocess.run([CHROMIUM, *FLAGS, f"--user-data-dir={profile}", *args],
                          capture_output=True, text=True, timeout=60, check=False)


def _screenshot(tmp: Path, url: str, name: str) -> Path:
    png = tmp / f"{name}.png"
    res = _chromium(tmp, f"--screenshot={png}", "--window-size=1400,1000", url)
    assert png.is_file(), res.stderr[-2000:]
    keep = os.environ.get("MEDAUDIT_SCREENSHOT_DIR")
    if keep:
        Path(keep).mkdir(parents=True, exist_ok=True)
        shutil.copy(png, Path(keep) / f"report_{name}.png")
    return png


def _dump_dom(tmp: Path, url: str, *extra: str) -> str:
    res = _chromium(tmp, "--window-size=1400,1000", "--virtual-time-budget=3000", *extra,
                    "--dump-dom", url)
    assert res.returncode == 0 and "<html" in res.stdout, res.stderr[-2000:]
    return res.stdout


def _colours(png: Path) -> tuple[int, bool]:
    """(number of distinct colours, whether every pixel is white)."""
    try:
        from PIL import Image
    except ImportError:  # pragma: no cover - PIL is optional
        import matplotlib.image as mpimg
        import numpy as np

        a = (mpimg.imread(str(png))[..., :3] * 255).round().astype(np.uint8).reshape(-1, 3)
        distinct = np.unique(a, axis=0)
        return len(distinct), bool((a == 255).all())
    with Image.open(png) as im:
        rgb = im.convert("RGB")
        colours = rgb.getcolors(maxcolors=1 << 24) or []
    return len(colours), colours == [(rgb.width * rgb.height, (255, 255, 255))]


@pytest.fixture(scope="module")
def simulated(small_audit):
    return small_audit


@pytest.fixture(scope="module")
def kwang(tmp_path_factory):
    if not KWANG.exists():
        pytest.skip(f"real data not found at {KWANG}")
    d = yaml.safe_load((EXAMPLES / "kwang311_tb.yaml").read_text())
    d["n_resamples"] = 100
    d["n_permutations"] = 99
    for w in d["scores_wide"]:
        w["path"] = str((EXAMPLES / w["path"]).resolve())
    outcome = audit(AuditSpec.model_validate(d), EXAMPLES)
    out = tmp_path_factory.mktemp("browser-kwang") / "audit"
    write_outcome(outcome, out)
    return outcome, out


def _check_page(outcome, out: Path, tmp: Path, name: str) -> None:
    url = (out / "report.html").resolve().as_uri()
    n, white = _colours(_screenshot(tmp, url, name))
    assert n > 50 and not white, (n, white)
    dom = _dump_dom(tmp, url)
    assert 'id="portability-matrix"' in dom
    first = min(dom.index(f'id="block-{b}"') for b in outcome.results)
    assert dom.index('id="portability-matrix"') < first
    for b in outcome.results:
        assert f'id="block-{b}"' in dom, b
    assert 'id="provenance"' in dom and 'id="checklist"' in dom
    # the inline script ran (it makes every sortable header focusable): the CSP let it in
    assert 'aria-sort="none" tabindex="0"' in dom


def test_simulated_report_renders(simulated, tmp_path):
    outcome, out = simulated
    _check_page(outcome, out, tmp_path, "simulated")


def test_real_data_report_renders(kwang, tmp_path):
    outcome, out = kwang
    _check_page(outcome, out, tmp_path, "kwang311")
    assert "Simulated data." not in (out / "report.html").read_text(encoding="utf-8")


class _Log(http.server.SimpleHTTPRequestHandler):
    """Serves the report folder; records (Host header, path) of every request, bad ones too."""

    log: list[tuple[str, str]]

    def log_message(self, format, *args):  # noqa: A002 - the base class's name
        headers = getattr(self, "headers", None)
        host = headers.get("Host", "") if headers is not None else ""
        path = getattr(self, "path", None) or repr(getattr(self, "raw_requestline", b""))[:80]
        self.log.append((host, path))


def _netlog_requests(path: Path) -> list[tuple[str, str]]:
    """(url, initiator) of every URL request in a Chromium net log."""
    d = json.loads(path.read_text(encoding="utf-8"))
    start = d["constants"]["logEventTypes"]["URL_REQUEST_START_JOB"]
    return [(e["params"].get("url", ""), str(e["params"].get("initiator", "")))
            for e in d["events"] if e.get("type") == start and "params" in e]


def _load_served(directory: Path, tmp: Path, page: str = "report.html"):
    """Serve ``directory`` on 127.0.0.1 and load ``page`` in Chromium.

    Returns the requests the local server saw, the URLs the page itself asked for (from the
    browser's net log: requests whose initiator is the page's origin, so Chromium's own
    background traffic does not count), the console lines about blocked or failed loads,
    the DOM and the port.
    """
    log: list[tuple[str, str]] = []
    handler = type("Handler", (_Log,), {"log": log})
    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), lambda *a, **k: handler(*a, directory=str(directory), **k))
    port = server.server_address[1]
    origin = f"http://127.0.0.1:{port}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    netlog = tmp / f"netlog-{port}.json"
    try:
        profile = tmp / f"profile-{len(list(tmp.glob('profile-*')))}"
        res = subprocess.run([CHROMIUM, *FLAGS, f"--user-data-dir={profile}", "--enable-logging=stderr",
                              "--v=0", f"--log-net-log={netlog}", "--window-size=1400,1000",
                              "--virtual-time-budget=3000", "--dump-dom", f"{origin}/{page}"],
                             capture_output=True, text=True, timeout=60, check=False)
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)
    from_page = [url for url, initiator in _netlog_requests(netlog)
                 if initiator == origin or url.startswith(origin + "/")]
    console = [line for line in res.stderr.splitlines() if ":CONSOLE" in line
               and ("Content Security Policy" in line or "Failed to load resource" in line
                    or "net::ERR" in line)]
    return log, from_page, console, res.stdout, port


@pytest.mark.parametrize("csp", [True, False], ids=["as-written", "csp-removed"])
@pytest.mark.parametrize("which", ["simulated", "kwang"])
def test_page_requests_nothing_but_itself(which, csp, request, tmp_path):
    """Loading the page fetches the page and nothing else, even with its CSP removed."""
    outcome, out = request.getfixturevalue(which)
    served = tmp_path / "served"
    served.mkdir()
    html = (out / "report.html").read_text(encoding="utf-8")
    if not csp:
        html, n = re.subn(r'<meta http-equiv="Content-Security-Policy"[^>]*>', "", html)
        assert n == 1
    (served / "report.html").write_text(html, encoding="utf-8")
    log, from_page, console, dom, port = _load_served(served, tmp_path)
    assert 'id="portability-matrix"' in dom
    assert log == [(f"127.0.0.1:{port}", "/report.html")], log  # not even /favicon.ico
    assert from_page == [f"http://127.0.0.1:{port}/report.html"], from_page
    assert console == [], console


def test_request_check_sees_external_and_relative_loads(simulated, tmp_path):
    """The check above can fail: a planted external image, stylesheet and relative image."""
    _, out = simulated
    served = tmp_path / "served"
    served.mkdir()
    html = (out / "report.html").read_text(encoding="utf-8")
    html = re.sub(r'<meta http-equiv="Content-Security-Policy"[^>]*>', "", html)
    html = html.replace("<main>", '<main><img src="https://example.com/x.png">'
                        '<link rel="stylesheet" href="http://example.org/a.css">'
                        '<img src="figures/local.png">', 1)
    (served / "report.html").write_text(html, encoding="utf-8")
    log, from_page, console, _, port = _load_served(served, tmp_path)
    assert "/figures/local.png" in [p for _, p in log], log
    assert {"https://example.com/x.png", "http://example.org/a.css",
            f"http://127.0.0.1:{port}/figures/local.png"} <= set(from_page), from_page
    # with the page's own Content-Security-Policy in place, the browser blocks and reports them
    html = (out / "report.html").read_text(encoding="utf-8").replace(
        "<main>", '<main><img src="https://example.com/x.png">', 1)
    (served / "report.html").write_text(html, encoding="utf-8")
    log, from_page, console, _, _ = _load_served(served, tmp_path)
    assert any("example.com/x.png" in line for line in console), console
    assert "https://example.com/x.png" not in from_page


_PROBE = """<script>
window.addEventListener("load", function () {
  var out = {};
  var grid = document.getElementById("t-discrimination-metrics-grid");
  var heads = grid.tHead.rows[0].cells, col = -1;
  for (var i = 0; i < heads.length; i++) { if (heads[i].textContent === "estimate") col = i; }
  function values() {
    return Array.prototype.map.call(grid.tBodies[0].rows, function (tr) {
      var v = tr.cells[col].getAttribute("data-v"); return v === null || v === "" ? null : parseFloat(v);
    }).filter(function (v) { return v !== null; });
  }
  function sorted(a, dir) {
    for (var i = 1; i < a.length; i++) { if (dir * (a[i] - a[i - 1]) < 0) return false; }
    return true;
  }
  function state() { return heads[col].getAttribute("aria-sort"); }
  heads[col].click(); out.asc = sorted(values(), 1) && state() === "ascending";
  heads[col].click(); out.desc = sorted(values(), -1) && state() === "descending";
  var first = document.querySelector("button.toggle");
  var row = document.getElementById(first.getAttribute("aria-controls"));
  out.hidden_before = row.hidden; first.click(); out.shown_after = !row.hidden;
  var cols = document.querySelector("button.cols");
  var table = document.getElementById(cols.getAttribute("data-table"));
  var extra = table.querySelector("th.x");
  out.extra_hidden = getComputedStyle(extra).display === "none";
  cols.click(); out.extra_shown = getComputedStyle(extra).display !== "none";
  document.querySelector('button.filter[data-filter="survives"]').click();
  out.filtered = Array.prototype.every.call(document.querySelectorAll("tbody.claim"), function (tb) {
    return tb.hidden === (tb.getAttribute("data-status") !== "survives"); });
  var pre = document.createElement("pre"); pre.id = "probe"; pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
});
</script></body>"""


def test_page_scripts_sort_toggle_and_filter(simulated, tmp_path):
    """The inline script: header clicks sort by the full-precision value, toggles open."""
    _, out = simulated
    page = tmp_path / "probe.html"
    page.write_text((out / "report.html").read_text(encoding="utf-8").replace("</body>", _PROBE),
                    encoding="utf-8")
    dom = _dump_dom(tmp_path, page.as_uri())
    m = re.search(r'<pre id="probe">(.*?)</pre>', dom)
    assert m, "probe did not run"
    result = json.loads(m.group(1))
    assert result == {"asc": True, "desc": True, "hidden_before": True, "shown_after": True,
                      "extra_hidden": True, "extra_shown": True, "filtered": True}, result


def test_real_data_report_names_dataset_citation_and_licence(kwang):
    """Issue 16 item 6: the report and summary on the kwang311 predictions name the data."""
    import html

    _, out = kwang
    page = html.unescape((out / "report.html").read_text(encoding="utf-8"))
    summary = (out / "summary.md").read_text(encoding="utf-8")
    for text in (page[:page.index('id="portability-matrix"')], summary):
        assert "kwang311/tbx11k-cross-cohort-eval" in text
        assert "Licence: MIT" in text and "Jaeger S" in text


# --------------------------------------------------------------------------- 400 px wide
#: the page in a 400 px wide frame (headless Chromium keeps its window at least 500 px wide,
#: so the viewport is a frame; srcdoc keeps the page's own origin, so the probe can read it)
_NARROW = """<!DOCTYPE html><html><head><meta charset="utf-8"></head><body style="margin:0">
<iframe id="f" style="width:400px;height:900px;border:0" srcdoc="{page}"></iframe>
<script>
document.getElementById("f").addEventListener("load", function () {{
  var d = this.contentDocument, root = d.documentElement;
  var out = {{scroll: root.scrollWidth, client: root.clientWidth, body: d.body.scrollWidth}};
  var pre = document.createElement("pre"); pre.id = "probe"; pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
}});
</script></body></html>"""


def _narrow(tmp: Path, page: str) -> dict:
    import html

    wrapper = tmp / f"narrow-{len(list(tmp.glob('narrow-*')))}.html"
    wrapper.write_text(_NARROW.format(page=html.escape(page, quote=True)), encoding="utf-8")
    dom = _dump_dom(tmp, wrapper.as_uri())
    m = re.search(r'<pre id="probe">(.*?)</pre>', dom)
    assert m, "probe did not run"
    return json.loads(m.group(1))


@pytest.mark.parametrize("which", ["simulated", "kwang"])
def test_report_is_readable_at_400_px(which, request, tmp_path):
    """Issue 16 item 6: no sideways scrolling of the whole page in a 400 px viewport (wide
    tables scroll inside their own box; header, notes, legends and figures wrap or scale)."""
    _, out = request.getfixturevalue(which)
    got = _narrow(tmp_path, (out / "report.html").read_text(encoding="utf-8"))
    assert got["client"] == 400, got  # the viewport really is 400 px
    assert got["scroll"] <= 400 and got["body"] <= 400, got


def test_400_px_check_sees_a_page_wider_than_the_screen(simulated, tmp_path):
    """The check above can fail: a planted 700 px block makes the page scroll sideways."""
    _, out = simulated
    page = (out / "report.html").read_text(encoding="utf-8").replace(
        "<main>", '<main><div style="width:700px">wide</div>', 1)
    got = _narrow(tmp_path, page)
    assert got["client"] == 400 and got["scroll"] > 400, got
