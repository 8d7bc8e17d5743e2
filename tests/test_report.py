"""The HTML report and the PNG/SVG figures: the page opens in headless Chromium with no console
errors and its charts render; a lock label that tries to inject markup stays text; the PNGs have
the expected size. Debian's chromium and chromium-driver are installed by scripts/install-deps.sh
(make test)."""

import shutil
import struct
from html.parser import HTMLParser
from pathlib import Path

import pytest
from conftest import ROOT
from locklab import cli

INJECTION = '<img src=x onerror="document.title=1">'
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Path:
    """A tiny real experiment whose second lock has a hostile label."""
    directory = tmp_path_factory.mktemp("report")
    campaign = directory / "hostile.toml"
    campaign.write_text(
        'name = "report-test"\nrepeat = 2\nduration = 0.1\nwarmup = 0\n'
        "[sweep]\nnwriters = [1, 2]\n"
        '[[variant]]\nlock = "ticket"\n'
        f"[[variant]]\nlabel = '{INJECTION}'\nlock = \"mcs\"\n"
    )
    engine = ROOT / "build" / "opt" / "locklab-bench"
    store = directory / "store"
    args = ["campaign", str(campaign), "--store", str(store), "--engine", str(engine)]
    assert cli.main(args) == 0
    return store


class ResourceFinder(HTMLParser):
    """Collects the src/href of every tag that would load something."""

    def __init__(self) -> None:
        super().__init__()
        self.found: list[str] = []

    def handle_starttag(self, tag: str, attrs: list) -> None:
        for name, value in attrs:
            if name in ("src", "href") and tag in ("script", "link", "img", "iframe"):
                self.found.append(f"{tag} {name}={value}")


def external_resources(page: str) -> list[str]:
    finder = ResourceFinder()
    finder.feed(page)
    return finder.found


def test_report_is_self_contained_and_escaped(store, tmp_path, capsys):
    page = tmp_path / "report.html"
    assert cli.main(["report", "--latest", "--store", str(store), "-o", str(page)]) == 0
    assert str(page) in capsys.readouterr().out
    text = page.read_text()
    assert INJECTION not in text  # only its escaped form may appear
    assert "&lt;img src=x onerror=" in text
    assert not external_resources(text)  # opens with no network
    # The header's one-line machine check, from what the sweep stored with each run.
    assert "noisy machine: " in text or "quiet machine: " in text


def test_report_renders_in_chromium(store, tmp_path):
    webdriver = pytest.importorskip("selenium.webdriver")
    if not Path(CHROMEDRIVER).exists():
        pytest.fail("chromedriver is missing: scripts/install-deps.sh installs chromium-driver")
    page = tmp_path / "report.html"
    assert cli.main(["report", "1", "--store", str(store), "-o", str(page)]) == 0

    options = webdriver.ChromeOptions()
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1400,2000"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    service = webdriver.ChromeService(executable_path=CHROMEDRIVER)
    driver = webdriver.Chrome(options=options, service=service)
    try:
        driver.set_page_load_timeout(60)
        driver.get(page.as_uri())
        charts = driver.execute_script(
            "return Array.from(document.querySelectorAll('.js-plotly-plot svg.main-svg'))"
            ".map(svg => [svg.getBoundingClientRect().width, svg.querySelectorAll('path').length])"
        )
        errors = [entry for entry in driver.get_log("browser") if entry["level"] == "SEVERE"]
        body = driver.execute_script("return document.body.innerText")
        title = driver.title
        images = driver.execute_script("return document.images.length")
        driver.save_screenshot(str(tmp_path / "report.png"))
    finally:
        driver.quit()
    assert not errors, errors
    assert charts and all(width > 100 for width, _ in charts)
    assert sum(paths for _, paths in charts) > 20  # lines, markers and axes were drawn
    assert INJECTION in body  # shown as text ...
    assert title.startswith("locklab report") and images == 0  # ... and never run
    assert (tmp_path / "report.png").stat().st_size > 10_000


def test_plot_writes_png_and_svg(store, tmp_path):
    out = tmp_path / "figures"
    assert cli.main(["plot", "1", "--store", str(store), "-o", str(out)]) == 0
    pngs = sorted(out.glob("*.png"))
    svgs = sorted(out.glob("*.svg"))
    assert [p.stem for p in pngs] == ["report-test-relative", "report-test-throughput"]
    assert [p.stem for p in svgs] == [p.stem for p in pngs]
    for png in pngs:
        header = png.read_bytes()[:24]
        assert header[:8] == b"\x89PNG\r\n\x1a\n"
        assert struct.unpack(">II", header[16:24]) == (800, 500)
        assert png.stat().st_size > 5_000
    for svg in svgs:
        assert svg.read_text().lstrip().startswith("<?xml") and svg.stat().st_size > 5_000


def test_report_needs_an_experiment(store, capsys):
    code = cli.main(["report", "--store", str(store)])
    captured = capsys.readouterr()
    assert code == 2
    assert captured.err.strip() == (
        "locklab: error: report: name one or more experiments, or give --latest"
    )


def test_experiments_side_by_side(store, tmp_path):
    engine = ROOT / "build" / "opt" / "locklab-bench"
    args = ["run", "--lock", "tas,ticket", "--nwriters", "1", "--repeat", "2", "--duration",
            "0.05", "--warmup", "0", "--name", "second-machine", "--store", str(store),
            "--engine", str(engine), "--plain"]  # fmt: skip
    assert cli.main(args) == 0
    page = tmp_path / "both.html"
    assert cli.main(["report", "1", "second-machine", "--store", str(store), "-o", str(page)]) == 0
    text = page.read_text()
    assert "--columns: 2" in text
    assert "<h2>#1 report-test</h2>" in text and "second-machine</h2>" in text
    assert text.count("plotly.js v") <= 2  # the library is embedded once, not per chart


def test_oversubscribed_points_are_shaded_in_the_charts(tmp_path):
    """Pinned to one CPU, two writers are oversubscribed: the table labels the row and the
    report's charts shade it."""
    engine = ROOT / "build" / "opt" / "locklab-bench"
    store = tmp_path / "s"
    args = ["run", "--lock", "tas,ticket", "--nwriters", "1,2", "--pin", "0", "--repeat", "2",
            "--duration", "0.05", "--warmup", "0", "--name", "crowded", "--store", str(store),
            "--engine", str(engine), "--plain"]  # fmt: skip
    assert cli.main(args) == 0
    page = tmp_path / "crowded.html"
    assert cli.main(["report", "crowded", "--store", str(store), "-o", str(page)]) == 0
    text = page.read_text()
    assert "2 (oversubscribed)" in text and '"text":"oversubscribed"' in text
