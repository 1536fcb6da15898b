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

from shiftbox.runs import write_html_report
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


@pytest.fixture(scope="module")
def demo_dir(tmp_path_factory) -> Path:
    from shiftbox.cli.demo import demo

    root = tmp_path_factory.mktemp("demo")
    demo(root)
    return root


def test_demo_report_shows_each_agents_own_scores_on_its_own_conversations(chromium, demo_dir, tmp_path):
    """Regression: both demo runs share simulation ids, and every row showed the oracle's scores."""
    from shiftbox.report import TOP_GOAL_PAIRS
    from shiftbox.runs import score_run
    from shiftbox.trajectory import read_trajectories
    from shiftbox_servers.kit import task_domains

    expected = {}
    for agent in ("oracle", "late_ack"):
        run, sims = score_run(demo_dir / agent)            # each agent scored on its own, apart from the report
        assert {t.agent for d in task_domains()
                for t in read_trajectories(demo_dir / agent / d)} == {f"scripted:{agent}"}
        for s in sims:
            expected[(s.agent, s.simulation_id)] = "pass" if s.success else "fail"
    drive = ("<script>var s=document.getElementById('filter-status');s.value='fail';"
             "s.dispatchEvent(new Event('change'));</script>")
    page = tmp_path / "demo.html"
    page.write_text((demo_dir / "report.html").read_text(encoding="utf-8").replace("</body>", drive + "</body>"),
                    encoding="utf-8")
    res = browse(chromium, tmp_path / "profile", page.as_uri(), "--dump-dom")
    assert console_lines(res.stderr) == []
    rows = re.findall(r'<details class="sim"[^>]*>', res.stdout)
    shown = {}
    for row in rows:
        key = (re.search(r'data-agent="([^"]+)"', row).group(1), re.search(r'data-sim="([^"]+)"', row).group(1))
        shown[key] = (re.search(r'data-status="(\w+)"', row).group(1), " hidden" not in row)
    assert {k: status for k, (status, _) in shown.items()} == expected
    failed = sorted(k for k, v in expected.items() if v == "fail")
    assert sorted(k for k, (_, visible) in shown.items() if visible) == failed      # the "failed" filter
    assert f"{len(failed)} of {len(expected)} simulations shown" in res.stdout
    # the goal-shift plot reads at a glance: the top pairs and one bar for the rest, labels not rotated
    for svg in re.findall(r'<svg[^>]*id="plot-gsrt-goal-pair-a\d".*?</svg>', res.stdout, flags=re.S):
        categories = re.findall(r"<text[^>]*><title>([^<]*)</title>", svg)
        assert 2 <= len(categories) <= TOP_GOAL_PAIRS + 1 and categories[-1].startswith("other (")
        assert "rotate(-35" not in svg


# Layout at two desktop widths (issue 29, item 13): every headline card holds its whole content (no clipped
# column: the GSRT card's "never", pass^k's "avg@k"), and the headline table by agent shows every column
# without a horizontal scroll. The page's own geometry is measured by an extra inline script.
MEASURE = """<script>(function(){
  var bad=[];
  document.querySelectorAll('.card').forEach(function(card,i){
    var box=card.getBoundingClientRect(),title=card.querySelector('h3').textContent;
    card.querySelectorAll('th,td,dt,dd,.big,.sub').forEach(function(el){
      var r=el.getBoundingClientRect();
      if(r.right>box.right-1||r.left<box.left+1){bad.push('card '+title+': '+el.textContent.trim());}
    });
    if(card.scrollWidth>card.clientWidth){bad.push('card '+title+' scrolls');}
  });
  document.querySelectorAll('.scroll').forEach(function(s){
    var t=s.querySelector('table');
    if(s.scrollWidth>s.clientWidth+1){bad.push('table '+(t&&t.id||'')+' scrolls: '+s.scrollWidth+'>'+s.clientWidth);}
  });
  document.documentElement.setAttribute('data-layout',bad.length?bad.join(' | '):'ok');
})();</script>"""


@pytest.fixture(scope="module")
def compare_file(tmp_path_factory) -> Path:
    from shiftbox.runs import compare_run_dirs, write_comparison_report
    from tests.client.report.test_html import make_run

    root = tmp_path_factory.mktemp("compare")
    runs = [make_run(root / name, f"scripted:{name}", trials=3) for name in ("oracle", "late_ack")]
    return write_comparison_report(compare_run_dirs(*runs), root / "compare.html")


def layout(chromium: str, page: Path, tmp_path: Path, width: int) -> str:
    measured = tmp_path / f"measured-{width}.html"
    measured.write_text(page.read_text(encoding="utf-8").replace("</body>", MEASURE + "</body>"), encoding="utf-8")
    res = browse(chromium, tmp_path / f"profile-{width}", measured.as_uri(), "--dump-dom",
                 f"--window-size={width},1200")
    assert console_lines(res.stderr) == []
    return re.search(r'data-layout="([^"]*)"', res.stdout).group(1)


@pytest.mark.parametrize("width", [1400, 1920])
def test_cards_and_headline_table_show_every_column(chromium, report_file, compare_file, tmp_path, width):
    assert layout(chromium, report_file, tmp_path, width) == "ok"
    assert layout(chromium, compare_file, tmp_path, width) == "ok"
