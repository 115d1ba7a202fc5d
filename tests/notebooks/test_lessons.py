"""Every lesson of the learning track runs top to bottom in quick mode, its ``assert`` cells (the
facts it teaches) included; one lesson's HTML export, opened in headless chromium, draws its
inline attention map and answers a hover.

A lesson added to ``notebooks/`` is covered the day it lands (the tests glob the directory).
The browser test needs chromium and chromedriver and skips, saying so, without them.
"""

from __future__ import annotations

import importlib.util
import os
import re
import time
from pathlib import Path

import pytest
from repo_scripts import load_script

LESSONS_DIR = Path(__file__).resolve().parents[2] / "notebooks"
LESSONS = sorted(LESSONS_DIR.glob("[0-9][0-9]_*.py"))

# what a lesson may say it needs -> its ATTNKIT_DATA_DIR folder
DATA_SETS = {"MNIST": "mnist", "bAbI": "babi"}
# what a lesson may say it needs -> (the module that brings it, how to install it)
MODULES = {"eSpeak NG": ("espeakng_loader", "pip install attnkit[speech]")}
BROWSER_LESSON = "04_famous_examples"
NO_SCRIPT = "data:text/javascript,"  # in place of the CDN scripts nbconvert's page would fetch


# The lessons run in a real kernel: each jupytext file is read with jupytext and run by nbclient,
# in quick mode (QUICK=1 unless the environment says otherwise), in a scratch directory; an
# executed lesson is kept for the session, so the browser test reuses it. (Not a conftest.py:
# tests/browser/ imports its helpers by the module name ``conftest``, which a second conftest
# would take.)


class Lessons:
    """Executes each lesson once per session: ``get(path) -> (notebook, seconds)``."""

    def __init__(self, root: Path):
        self.root = root
        self.done: dict[Path, tuple] = {}

    def get(self, path: Path):
        if path not in self.done:
            self.done[path] = self._execute(path)
        return self.done[path]

    def _execute(self, path: Path):
        jupytext = pytest.importorskip("jupytext", reason="pip install jupytext (the test extras)")
        nbclient = pytest.importorskip("nbclient", reason="pip install nbclient (the test extras)")
        pytest.importorskip("ipykernel", reason="pip install ipykernel (the test extras)")
        nb = jupytext.read(path)
        cwd = self.root / path.stem
        cwd.mkdir(parents=True, exist_ok=True)
        saved = {k: os.environ.get(k) for k in ("QUICK", "MPLBACKEND", "OMP_NUM_THREADS")}
        os.environ.setdefault("QUICK", "1")
        os.environ.setdefault("OMP_NUM_THREADS", "1")
        os.environ.pop("MPLBACKEND", None)  # the kernel's inline backend draws the figures
        try:
            start = time.perf_counter()
            client = nbclient.NotebookClient(nb, timeout=1800, kernel_name="python3")
            client.execute(cwd=str(cwd))
            return nb, time.perf_counter() - start
        finally:
            for key, value in saved.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value


@pytest.fixture(scope="session")
def lessons(tmp_path_factory) -> Lessons:
    return Lessons(tmp_path_factory.mktemp("lessons"))


def _browser_helpers():
    """tests/browser/conftest.py, by path (the name ``conftest`` may be another directory's)."""
    return load_script("tests/browser/conftest.py", "browser_conftest")


def test_the_track_has_its_lessons_in_order():
    numbers = [int(p.name[:2]) for p in LESSONS]
    assert numbers[:4] == [1, 2, 3, 4] and numbers == list(range(1, len(numbers) + 1))
    for path in LESSONS:
        text = path.read_text(encoding="utf-8")
        assert "format_name: percent" in text, path.name  # jupytext percent format
        assert "## What to look for" in text and "## Exercises" in text, path.name
        assert re.search(r"^assert ", text, re.M), f"{path.name}: no assert cell"
        assert re.search(r"\$[^$\n]+\$", text), f"{path.name}: no equation in LaTeX"
    readme = (LESSONS_DIR / "README.md").read_text(encoding="utf-8")
    assert all(p.name in readme for p in LESSONS)  # the front page lists every lesson


def test_lesson_10s_legend_covers_no_bar(tmp_path):
    """Lesson 10's accuracy chart, drawn by its own lines with scores as the lesson reaches them
    (GAT near chance, GATv2 at 100%): the legend's box overlaps no bar."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    text = (LESSONS_DIR / "10_graph_attention.py").read_text(encoding="utf-8")
    start = text.index("fig, ax = plt.subplots(")
    chart = text[start : text.index("plt.show()", start)]
    assert "ax.bar(" in chart and "ax.legend(" in chart, "lesson 10: the accuracy chart moved"
    scores = {"gat": {"train": 31.0, "test": 24.0}, "gatv2": {"train": 100.0, "test": 100.0}}
    space = {"plt": plt, "np": np, "K": 5, "scores": scores}
    exec(chart, space)
    fig, ax = space["fig"], space["ax"]
    try:
        fig.savefig(tmp_path / "chart.png")
        renderer = fig.canvas.get_renderer()
        legend = ax.get_legend().get_window_extent(renderer)
        bars = [patch.get_window_extent(renderer) for patch in ax.patches]
        assert len(bars) == 4 and not any(legend.overlaps(bar) for bar in bars)
        assert fig.bbox.contains(legend.x1 - 1, legend.y0 + 1)  # inside the picture
    finally:
        plt.close(fig)


def _skip_without_data(path: Path) -> None:
    """A lesson that says it needs a data set (``*Needs MNIST*``) skips where the test session
    has none (tests/conftest.py points ATTNKIT_DATA_DIR at ../shared/data when it exists), and
    one that says it needs a library (``*Needs eSpeak NG*``) where it is not installed."""
    text = path.read_text(encoding="utf-8")
    for name, directory in DATA_SETS.items():
        if f"*Needs {name}*" in text:
            root = os.environ.get("ATTNKIT_DATA_DIR", "").strip()
            if not root or not (Path(root) / directory).is_dir():
                pytest.skip(f"{path.name} needs {name}: set ATTNKIT_DATA_DIR to hold {directory}/")
    for name, (module, install) in MODULES.items():
        if f"*Needs {name}*" in text and importlib.util.find_spec(module) is None:
            pytest.skip(f"{path.name} needs {name}: {install}")


@pytest.mark.slow
@pytest.mark.parametrize("path", LESSONS, ids=[p.stem for p in LESSONS])
def test_each_lesson_runs_in_quick_mode(lessons, path):
    _skip_without_data(path)
    nb, seconds = lessons.get(path)
    errors = [o for c in nb.cells for o in c.get("outputs", []) if o["output_type"] == "error"]
    assert not errors
    pictures = sum(
        1
        for c in nb.cells
        for o in c.get("outputs", [])
        if {"image/png", "text/html"} & set(o.get("data", {}))
    )
    assert pictures >= 3, f"{path.name}: a picture after every idea"
    print(f"{path.name}: {seconds:.1f} s")  # -s shows each lesson's time


@pytest.mark.slow
def test_a_lesson_export_draws_its_map_in_a_browser(lessons, tmp_path):
    nbconvert = pytest.importorskip("nbconvert", reason="pip install nbconvert (the test extras)")
    helpers = _browser_helpers()
    helpers.require_browser()
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    (path,) = [p for p in LESSONS if p.stem == BROWSER_LESSON]
    nb, _ = lessons.get(path)
    exporter = nbconvert.HTMLExporter(template_name="lab")
    exporter.mathjax_url = exporter.require_js_url = NO_SCRIPT
    page, _ = exporter.from_notebook_node(nb)
    html = tmp_path / "lesson.html"
    html.write_text(page, encoding="utf-8")
    driver = helpers.new_driver()
    try:
        driver.get(html.as_uri())
        views = driver.find_elements(By.CSS_SELECTOR, ".attnkit-view")
        assert views, "no inline attention view in the export"
        view = views[0]
        WebDriverWait(driver, 30).until(
            lambda d: view.find_elements(By.CSS_SELECTOR, "td.hm-cell"), "the heatmap cells"
        )
        cells = view.find_elements(By.CSS_SELECTOR, "td.hm-cell")
        readout = view.find_element(By.CSS_SELECTOR, ".hm-readout")
        before = readout.text
        ActionChains(driver).move_to_element(cells[0]).perform()
        WebDriverWait(driver, 30).until(
            lambda d: readout.text != before and ": " in readout.text, "the hover readout"
        )
        assert readout.text.split(": ")[-1].replace(".", "").isdigit()
        severe = [e["message"] for e in driver.get_log("browser") if e["level"] == "SEVERE"]
        assert severe == []
    finally:
        driver.quit()
