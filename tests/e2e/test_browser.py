"""The reports in a real browser: headless Chromium opens index.html and every report page, takes a
screenshot of each, and reports from inside the page whether every figure decoded, whether any
error or stderr output is on the page, and where the index links point.

How the page is inspected (chosen to be robust on a 2-core machine, without Selenium or a
DevTools websocket client): the test writes a copy of each page into a temporary folder with one
<script> appended before </body>. On the window `load` event the script collects, for every
<img>, `complete`, `naturalWidth` and `naturalHeight`; counts error outputs
(`[data-mime-type="application/vnd.jupyter.stderr"]`, which nbconvert uses for both stderr
streams and exceptions, plus the classic `.output_error`); looks for "Traceback" and
`...Error:` lines in output areas; and lists every link's raw href. It writes the result as JSON
into a <pre id="ampere-probe"> element. Chromium runs once per page with `--dump-dom`,
`--screenshot` and `--virtual-time-budget=10000` (the page's scripts and image decoding finish
in virtual time before the DOM is dumped, independent of how slow the machine is), and the test
reads the JSON back from the dumped DOM. Apart from that one script the copy is byte-identical
to the report; the screenshot shows exactly what a reader sees.
"""

from __future__ import annotations

import functools
import html
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
from pathlib import Path

import pytest

from analysis.report import NOTEBOOKS

CHROMIUM = Path("/usr/bin/chromium")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--no-first-run", "--disable-sync"]
WINDOW = (1400, 4000)
PAGES = ("index", *NOTEBOOKS)  # the report's pages (analysis.report.NOTEBOOKS)
BROWSER_TIMEOUT_S = 180
PROBE_ID = "ampere-probe"
PROBE = """<script>
window.addEventListener("load", function () {
  var images = Array.prototype.map.call(document.images, function (img) {
    return {complete: img.complete, width: img.naturalWidth, height: img.naturalHeight,
            src: (img.getAttribute("src") || "").slice(0, 30)};
  });
  var errors = document.querySelectorAll(
    '[data-mime-type="application/vnd.jupyter.stderr"], .output_error, .output_stderr').length;
  var outputs = Array.prototype.map.call(document.querySelectorAll(".jp-OutputArea-output"),
                                         function (el) { return el.textContent || ""; });
  var errorLines = outputs.filter(function (t) {
    return /Traceback|(^|\\n)\\s*[A-Za-z_.]*(Error|Exception): /.test(t);
  }).map(function (t) { return t.slice(0, 200); });
  var links = Array.prototype.map.call(document.querySelectorAll("a[href]"),
                                       function (a) { return a.getAttribute("href"); });
  var pre = document.createElement("pre");
  pre.id = "%s";
  pre.textContent = JSON.stringify({title: document.title, images: images, errors: errors,
                                    errorLines: errorLines, links: links,
                                    traceback: (document.body.innerText || "").indexOf("Traceback") >= 0});
  document.body.appendChild(pre);
});
</script>
""" % PROBE_ID


def require_chromium() -> None:
    if not os.access(CHROMIUM, os.X_OK):
        pytest.fail(f"Chromium not found at {CHROMIUM}: run `make test` (its set-up step installs the Debian "
                    "package `chromium`), or `apt-get install chromium`", pytrace=False)


def _run_browser(args: list[str]) -> tuple[int, str, str]:
    """Run Chromium in its own process group; on timeout the whole group is killed."""
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=BROWSER_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        pytest.fail(f"Chromium did not finish within {BROWSER_TIMEOUT_S} s: {' '.join(args)}", pytrace=False)
    return proc.returncode, out, err


@functools.lru_cache(maxsize=None)
def inspect(page: Path, screenshot: Path) -> dict:
    """Open a probe copy of `page` in headless Chromium; returns the probe's JSON."""
    text = page.read_text(encoding="utf-8")
    end = text.rfind("</body>")
    assert end >= 0, f"{page}: no </body>"
    work = Path(tempfile.mkdtemp(prefix="ampere-browser-"))
    try:
        probe_page = work / page.name
        probe_page.write_text(text[:end] + PROBE + text[end:], encoding="utf-8")
        profile = work / "profile"
        profile.mkdir()
        screenshot.parent.mkdir(parents=True, exist_ok=True)
        args = [str(CHROMIUM), *FLAGS, f"--user-data-dir={profile}", f"--screenshot={screenshot}",
                f"--window-size={WINDOW[0]},{WINDOW[1]}", "--virtual-time-budget=10000", "--dump-dom",
                probe_page.as_uri()]
        code, dom, err = _run_browser(args)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    assert code == 0, f"Chromium exited with {code} on {page.name}:\n{err[-2000:]}"
    match = re.search(rf'<pre id="{PROBE_ID}">(.*?)</pre>', dom, re.S)
    assert match, f"{page.name}: the probe did not run (no load event within the time budget?)\n{err[-1000:]}"
    return json.loads(html.unescape(match.group(1)))


def png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()[:24]
    assert data[:8] == b"\x89PNG\r\n\x1a\n", f"{path} is not a PNG"
    return int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")


def page_path(pipeline, name: str) -> Path:
    return pipeline.report_dir / f"{name}.html"


def test_chromium_is_installed():
    require_chromium()


@pytest.mark.parametrize("name", PAGES)
def test_page_renders_with_every_figure_and_no_error(pipeline, name):
    require_chromium()
    pipeline.require("bench", "report")
    page = page_path(pipeline, name)
    screenshot = pipeline.root / "screenshots" / f"{name}.png"
    probe = inspect(page, screenshot)
    source_images = len(re.findall(r"<img\b", page.read_text(encoding="utf-8"), re.I))
    assert len(probe["images"]) == source_images
    if name != "index":
        assert source_images >= 1, f"{name}: no figure"
    bad = [img for img in probe["images"] if not (img["complete"] and img["width"] > 0 and img["height"] > 0)]
    assert not bad, f"{name}: figures that did not decode: {bad}"
    assert probe["errors"] == 0, f"{name}: {probe['errors']} error/stderr output element(s) on the page"
    assert not probe["errorLines"], f"{name}: error text in outputs: {probe['errorLines']}"
    assert not probe["traceback"], f"{name}: 'Traceback' on the page"
    assert probe["title"].strip(), f"{name}: page without a title"
    assert png_size(screenshot) == WINDOW
    from PIL import Image

    with Image.open(screenshot) as shot:
        extrema = shot.convert("L").getextrema()
    assert extrema[0] < extrema[1], f"{name}: the screenshot is blank"


def test_index_links_resolve(pipeline):
    require_chromium()
    pipeline.require("bench", "report")
    folder = pipeline.report_dir
    probe = inspect(folder / "index.html", pipeline.root / "screenshots" / "index.png")
    links = probe["links"]
    assert sorted(links) == sorted([f"{n}.html" for n in PAGES[1:]] + [f"{n}.ipynb" for n in PAGES[1:]])
    for href in links:
        assert (folder / href).is_file(), f"index.html links to {href}, which does not exist"
    for name in PAGES[1:]:
        back = inspect(folder / f"{name}.html", pipeline.root / "screenshots" / f"{name}.png")["links"]
        assert "index.html" in back, f"{name}.html has no link back to the index"


def test_the_probe_sees_broken_figures_and_error_output(tmp_path):
    """The checks above can fail: a page with a corrupt image and an exception output is caught."""
    require_chromium()
    page = tmp_path / "bad.html"
    page.write_text(
        '<!DOCTYPE html><html><head><title>bad</title></head><body>'
        '<img src="data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==">'
        '<img src="data:image/png;base64,bm90IGEgcG5n">'
        '<div class="jp-RenderedText jp-OutputArea-output" data-mime-type="application/vnd.jupyter.stderr">'
        "<pre>Traceback (most recent call last):\nKeyError: 'x'</pre></div>"
        '<a href="missing.html">x</a></body></html>', encoding="utf-8")
    probe = inspect(page, tmp_path / "bad.png")
    assert [img["width"] > 0 for img in probe["images"]] == [True, False]
    assert probe["errors"] == 1 and probe["traceback"] and probe["errorLines"]
    assert probe["links"] == ["missing.html"]
