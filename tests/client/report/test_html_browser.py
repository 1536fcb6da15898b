"""The HTML report in headless Chromium: it renders, its plots are there, its script runs without errors.

Skipped when Chromium is not installed (CI installs it: .ci/run).
"""

from __future__ import annotations

import re
import shutil
import struct
import subprocess
from pathlib import Path

import pytest

from shiftbox.report import write_html_report
from tests.client.report.test_html import PLOT_TITLES, make_run

pytestmark = pytest.mark.slow

FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--disable-extensions", "--no-first-run",
         "--no-default-browser-check", "--hide-scrollbars", "--enable-logging=stderr", "--v=0")


@pytest.fixture(scope="module")
def chromium() -> str:
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    if path is None:
        pytest.skip("headless Chromium not installed: apt-get install chromium (CI installs it)")
    return path


@pytest.fixture(scope="module")
def report_file(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("browser")
    run_dir = make_run(root / "run", "scripted:late_ack")
    return write_html_report(run_dir, root / "report.html")


def browse(chromium: str, profile: Path, url: str, *mode: str) -> subprocess.CompletedProcess:
    res = subprocess.run([chromium, *FLAGS, f"--user-data-dir={profile}", *mode, url],
                         capture_output=True, text=True, timeout=90)
    assert res.returncode == 0, res.stderr[-2000:]
    return res


def console_lines(stderr: str) -> list[str]:
    """What the page wrote to the console (errors, CSP violations, console.* calls)."""
    return [line for line in stderr.splitlines() if ":CONSOLE" in line]


def test_report_renders_in_chromium_without_console_errors(chromium, report_file, tmp_path):
    url = report_file.as_uri() + "#sim-2"
    res = browse(chromium, tmp_path / "profile-dom", url, "--dump-dom")
    dom = res.stdout
    html_tag = re.search(r"<html\b[^>]*>", dom).group(0)
    assert 'data-report-ready="1"' in html_tag, "the report's script did not run to the end"
    assert "data-report-errors" not in html_tag, html_tag
    assert console_lines(res.stderr) == []
    assert dom.count("<svg") == len(PLOT_TITLES)
    for title in PLOT_TITLES:
        assert f">{title}</title>" in dom
    assert re.search(r'<details class="sim" id="sim-2"[^>]*\bopen\b', dom), "#sim-2 should open its conversation"
    assert "10 of 10" not in dom and "5 of 5 simulations shown" in dom

    png = tmp_path / "report.png"
    res = browse(chromium, tmp_path / "profile-shot", report_file.as_uri(), f"--screenshot={png}",
                 "--window-size=1280,2000")
    assert console_lines(res.stderr) == []
    data = png.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 20_000
    width, height = struct.unpack(">II", data[16:24])
    assert (width, height) == (1280, 2000)


def test_filter_and_expand_controls_work(chromium, report_file, tmp_path):
    """Drive the page's controls from an extra inline script (a copy of the report, in tmp_path)."""
    drive = ("<script>var f=document.getElementById('filter-text');f.value='HW_BANKING_004';"
             "f.dispatchEvent(new Event('input'));document.getElementById('expand-all').click();</script>")
    page = tmp_path / "driven.html"
    page.write_text(report_file.read_text(encoding="utf-8").replace("</body>", drive + "</body>"), encoding="utf-8")
    res = browse(chromium, tmp_path / "profile", page.as_uri(), "--dump-dom")
    assert console_lines(res.stderr) == []
    sims = re.findall(r'<details class="sim"[^>]*>', res.stdout)
    shown = [s for s in sims if " hidden" not in s]
    assert len(sims) == 5 and len(shown) == 1 and 'data-sim="hw_banking_004#0"' in shown[0]
    assert re.search(r"\bopen\b", shown[0])
    assert "1 of 5 simulations shown" in res.stdout
