"""The Python API in a notebook: a notebook that loads an RNN translator, a Transformer and a
digit classifier and shows a result of each is executed (nbclient, a real IPython kernel),
exported to HTML (nbconvert, as a user shares it), and the export is opened in headless
chromium: the heatmap cells are drawn, hovering one reads its weight, the Transformer's map has
its layer/head choice, and the console stays clean. Nothing is fetched from the network.

The execution test needs nbclient, nbformat, nbconvert and ipykernel (the test extras); the
browser test also needs chromium and chromedriver, and skips, saying so, without them.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat", reason="pip install nbformat (the test extras)")
nbclient = pytest.importorskip("nbclient", reason="pip install nbclient (the test extras)")
nbconvert = pytest.importorskip("nbconvert", reason="pip install nbconvert (the test extras)")
pytest.importorskip("ipykernel", reason="pip install ipykernel (the test extras)")

# an empty script in place of the CDN scripts nbconvert's page would fetch (MathJax, require.js)
NO_SCRIPT = "data:text/javascript,"


def _models(root: Path) -> dict[str, Path]:
    """A numbers translator (Bahdanau), a two-layer two-head Transformer, each trained for two
    epochs by attnkit.train, and an untrained digit classifier (attention pooling)."""
    from conftest import TINY_TRANSFORMER, vision_checkpoint, write_digits

    import attnkit

    data = {"task": "numbers", "languages": ["de", "en"], "max_number": 99}
    rnn = {"attention": "bahdanau", "embedding_dim": 16, "encoder_hidden": 24}
    paths = {}
    for name, model in (("rnn", rnn), ("transformer", TINY_TRANSFORMER)):
        config = {"name": name, "data": data, "model": model, "train": {"epochs": 2}}
        paths[name] = attnkit.train(config, output_dir=root / name).best
    digits = write_digits(root / "mnist")
    paths["vision"] = vision_checkpoint(root / "pool" / "best", digits, "attention_pooling")
    return paths


def _notebook(paths: dict[str, Path]):
    """The notebook of the API's first promise: load, translate, show; the same for a
    Transformer (its result as the cell's value) and a vision model."""
    v4 = nbformat.v4
    nb = v4.new_notebook()
    nb.cells = [
        v4.new_markdown_cell("# attnkit in a notebook"),
        v4.new_code_cell(f"paths = {json.dumps({k: str(v) for k, v in paths.items()})}"),
        v4.new_code_cell(
            'import attnkit\nm = attnkit.load(paths["rnn"])\n'
            'm.translate("siebenundneunzig")[0].show()'
        ),
        v4.new_code_cell('attnkit.load(paths["transformer"]).translate("dreiundzwanzig")[0]'),
        v4.new_code_cell('attnkit.load(paths["vision"]).classify(3).show()'),
        v4.new_code_cell('m.explain("dreiundzwanzig").show()'),
    ]
    return nb


@pytest.fixture(scope="module")
def executed(tmp_path_factory):
    """(the executed notebook, its HTML export's path)."""
    root = tmp_path_factory.mktemp("notebook")
    nb = _notebook(_models(root))
    nbclient.NotebookClient(nb, timeout=600, kernel_name="python3").execute(cwd=str(root))
    exporter = nbconvert.HTMLExporter(template_name="lab")
    exporter.mathjax_url = exporter.require_js_url = NO_SCRIPT
    page, _ = exporter.from_notebook_node(nb)
    path = root / "notebook.html"
    path.write_text(page, encoding="utf-8")
    return nb, path


def _html_outputs(cell) -> list[str]:
    return [o["data"]["text/html"] for o in cell.outputs if "text/html" in o.get("data", {})]


def test_the_notebook_shows_every_result_inline(executed):
    nb, page = executed
    shown = [_html_outputs(cell) for cell in nb.cells[2:]]
    assert [len(s) for s in shown] == [1, 1, 1, 1]  # one view each, .show() or the cell's value
    assert nb.cells[3].outputs[0]["output_type"] == "execute_result"  # _repr_html_
    for (html,) in shown:
        assert "window.AttnkitHeatmap" in html and 'type="application/json"' in html
    assert '"heads"' in shown[1][0] and '"kind": "vision"' in shown[2][0]
    assert '"saliency"' in shown[3][0]
    text = page.read_text(encoding="utf-8")
    assert "https://" not in "".join(o for s in shown for o in s)  # the views fetch nothing
    assert text.count('class="attnkit-view"') == 4


def test_the_export_draws_the_maps_in_a_browser(executed):
    from conftest import new_driver
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.select import Select
    from test_explorer import severe, wait

    nb, page = executed
    driver = new_driver()
    try:
        driver.get(page.as_uri())
        views = driver.find_elements(By.CSS_SELECTOR, ".attnkit-view")
        assert len(views) == 4
        rnn, transformer, vision, explained = views
        wait(driver, lambda d: rnn.find_elements(By.CSS_SELECTOR, "td.hm-cell"), "rnn cells")
        assert not rnn.find_elements(By.CSS_SELECTOR, "img.attnkit-static")  # replaced live
        cells = rnn.find_elements(By.CSS_SELECTOR, "td.hm-cell")
        readout = rnn.find_element(By.CSS_SELECTOR, ".hm-readout")
        before = readout.text
        ActionChains(driver).move_to_element(cells[0]).perform()
        wait(driver, lambda d: readout.text != before and ": " in readout.text, "the readout")
        assert readout.text.split(": ")[-1].replace(".", "").isdigit()

        choice = Select(transformer.find_element(By.CSS_SELECTOR, "select.attnkit-choice"))
        labels = [o.text for o in choice.options]
        assert labels[0] == "mean of all layers and heads" and "layer 2, head 2" in labels

        def colours():
            found = transformer.find_elements(By.CSS_SELECTOR, "td.hm-cell")
            return [c.value_of_css_property("background-color") for c in found]

        mean = colours()
        choice.select_by_visible_text("layer 1, head 1")
        head = colours()
        assert len(head) == len(mean) > 0 and head != mean  # one head is not the mean of all

        assert vision.find_elements(By.CSS_SELECTOR, "canvas")  # the image, drawn
        assert vision.find_elements(By.CSS_SELECTOR, ".ov-cell")  # its attention over it
        options = Select(explained.find_element(By.CSS_SELECTOR, "select.attnkit-choice"))
        assert "saliency (implicit attention)" in [o.text for o in options.options]
        assert severe(driver) == []
    finally:
        driver.quit()
