"""The HTML report (issue 39): one self-contained page beside the Markdown report, written
by the same output writer (and by ``report``), and looked at as a person sees it: rendered
in headless Chromium at 1280 px, the headline shown, every chart visible with a size, no
broken image, nothing wider than the window.

The Chromium test skips only where Chromium is not installed and this is not CI (CI=true:
.ci/run installs Debian's ``chromium``, so a missing browser there fails)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT, run_environment_restored

from asyncbench.cli.main import main
from asyncbench.fs.ownership import is_own_html_report
from asyncbench.report import outputs
from asyncbench.result import RunResult

FIXTURE = Path(__file__).parent / "fixtures" / "result-sample.json"
WIDTH = 1280


@pytest.fixture(scope="module")
def real_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real small run (two engines, two repeats): its HTML report."""
    tmp = tmp_path_factory.mktemp("html")
    with run_environment_restored():  # module scope: outside each test's own restore (conftest)
        code = run_quick(tmp)
    assert code == 0
    (page,) = (tmp / "out").glob("profiles-2000-p1/asyncbench-*.html")
    return page


def run_quick(tmp: Path) -> int:
    return main(
        [
            str(ROOT / "benchmarks" / "quick.toml"), "--engine", "memory,sqlite", "--profiles", "2k",
            "--repeat", "2", "--no-isolate", "--no-progress", "--quiet",
            "--output", str(tmp / "out"), "--data", str(tmp / "data"),
        ]
    )  # fmt: skip


def test_the_page_is_written_beside_the_markdown_and_carries_everything(real_run: Path) -> None:
    page = real_run.read_text()
    md = real_run.with_suffix(".md").read_text()
    assert is_own_html_report(real_run)
    charts = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", md)
    assert len(charts) >= 6
    assert page.count('<img src="data:image/svg+xml;base64,') == len(charts)
    assert "chart not available" not in page
    # one file: nothing fetched from the network or read from beside it
    assert not re.search(r"""(src|href)=["'](https?:|//|[^"'#d])""", page), "a resource outside the page"
    assert "<script" not in page and "<link" not in page
    assert "<h2>Total By Engine</h2>" in page and '<div class="table"><table>' in page
    assert '<section class="headline">' in page and "checksums: All 2 engines agree" in page


def test_text_from_the_result_is_escaped_never_markup(tmp_path: Path) -> None:
    run = RunResult.from_json(FIXTURE.read_bytes())
    run.engines[1].notes.append("<script>alert(1)</script> & <b>bold</b>")
    _, md = outputs.write_run(run, tmp_path, "s", charts=False)
    page = outputs.html_path(md).read_text()
    assert "<script>alert" not in page and "<b>bold" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt; &amp; &lt;b&gt;bold&lt;/b&gt;" in page


def test_report_rerenders_the_page_and_leaves_a_foreign_one_alone(tmp_path: Path) -> None:
    result = tmp_path / "asyncbench-s.json"
    result.write_bytes(FIXTURE.read_bytes())
    cmd = [sys.executable, "-m", "asyncbench", "report", str(result)]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    page = tmp_path / "asyncbench-s.html"
    assert f"html:   {page}" in proc.stdout and is_own_html_report(page)
    again = subprocess.run(cmd, capture_output=True, text=True, check=False)  # its own page: replaced
    assert again.returncode == 0, again.stderr
    page.unlink()
    page.write_text("<p>my notes</p>")  # a user's file of that name: never replaced
    refused = subprocess.run(cmd, capture_output=True, text=True, check=False)
    assert refused.returncode == 2 and str(page) in refused.stderr
    assert page.read_text() == "<p>my notes</p>"


# -- as a person sees it ----------------------------------------------------------------------

#: Appended to a copy of the page: writes what a reader would see into the DOM, read back by
#: ``--dump-dom`` (no remote debugging port, nothing but a local file).
PROBE = """
<script>
window.addEventListener("load", () => {
  const W = window.innerWidth;
  const inScrollBox = (el) => {  // inside a box that scrolls (or clips) sideways, not the box itself
    const box = el.parentElement && el.parentElement.closest(".table");
    return box !== null && ["auto", "scroll", "hidden"].includes(getComputedStyle(box).overflowX);
  };
  const wide = [];
  for (const el of document.querySelectorAll("body *")) {
    if (el.id === "probe" || inScrollBox(el)) continue;
    const r = el.getBoundingClientRect();
    if (r.right > W + 0.5 || r.left < -0.5) wide.push(el.tagName + "." + el.className + " " + Math.round(r.right));
  }
  const images = [...document.images].map((img) => {
    const r = img.getBoundingClientRect();
    return {alt: img.alt, complete: img.complete, natural: img.naturalWidth, w: r.width, h: r.height,
            shown: getComputedStyle(img).visibility !== "hidden" && getComputedStyle(img).display !== "none"};
  });
  const box = document.querySelector(".headline");
  const facts = {width: W, scrollWidth: document.documentElement.scrollWidth, wide, images,
                 headline: box ? box.innerText : "", headlineHeight: box ? box.getBoundingClientRect().height : 0};
  const out = document.createElement("pre");
  out.id = "probe";
  out.textContent = JSON.stringify(facts);
  document.body.appendChild(out);
});
</script>
"""


def chromium() -> str | None:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        if os.environ.get("CI"):  # as conftest.postgres_expected: CI must not skip
            pytest.fail("CI: chromium is not installed (.ci/run installs Debian's chromium package)")
        pytest.skip("chromium is not installed (apt-get install chromium); CI runs this test")
    return found


def looked_at(page: Path, tmp_path: Path) -> dict:
    browser = chromium()
    probed = tmp_path / "probed.html"
    probed.write_text(page.read_text().replace("</body>", PROBE + "</body>"))
    proc = subprocess.run(
        [
            browser, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-extensions",
            f"--user-data-dir={tmp_path / 'profile'}", f"--window-size={WIDTH},1000",
            "--virtual-time-budget=10000", "--dump-dom", probed.as_uri(),
        ],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    found = re.search(r'<pre id="probe">(.*?)</pre>', proc.stdout, re.S)
    assert found, f"no probe in chromium's DOM (exit {proc.returncode}): {proc.stderr[-2000:]}"
    import html

    facts: dict = json.loads(html.unescape(found.group(1)))
    return facts


def test_the_page_in_chromium_at_1280_px(real_run: Path, tmp_path: Path) -> None:
    facts = looked_at(real_run, tmp_path)
    assert facts["width"] == WIDTH
    # at 2_000 profiles a write phase may be under the too-short floor: then it is not ranked
    assert any(w in facts["headline"] for w in ("write: sqlite", "write: too short to measure")), facts["headline"]
    assert "checksums: All 2 engines agree" in facts["headline"] and facts["headlineHeight"] > 0
    charts = len(re.findall(r"!\[[^\]]*\]\(", real_run.with_suffix(".md").read_text()))
    assert len(facts["images"]) == charts >= 6
    for img in facts["images"]:
        assert img["complete"] and img["natural"] > 0, f"broken image: {img}"
        assert img["shown"] and img["w"] > 100 and img["h"] > 50, f"chart not visible: {img}"
        assert img["w"] <= WIDTH, img
    assert facts["wide"] == [], facts["wide"]
    assert facts["scrollWidth"] <= WIDTH, facts["scrollWidth"]


def test_update_latest_writes_the_page_beside_latest_md(tmp_path: Path) -> None:
    """--update-latest keeps latest.md; latest.html is the same report as one page."""
    run = RunResult.from_json(FIXTURE.read_bytes())
    directory = tmp_path / "profiles-2000-p1"
    outputs.write_run(run, directory, "s")
    md = outputs.update_latest(run, directory, "s", tmp_path)
    page = tmp_path / "latest.html"
    assert is_own_html_report(page)
    text = page.read_text()
    assert text.count('<img src="data:image/svg+xml;base64,') == md.read_text().count("![")
    assert "checksums: All 3 engines agree" in text and "verdict:" in text  # the headline, as latest.md's
    assert (page, is_own_html_report, "report") in outputs.latest_files(tmp_path, [directory])
