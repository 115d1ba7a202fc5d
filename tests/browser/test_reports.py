"""report.html (seq2seq) and the vision report in headless chromium: their maps are drawn by
the page's heatmap renderer, which they inline from the same file the server serves."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("selenium", reason="pip install selenium (the browser tests drive chromium)")
from selenium.webdriver.common.action_chains import ActionChains  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support.select import Select  # noqa: E402
from test_explorer import body, severe, show, wait, wait_cells  # noqa: E402


@pytest.fixture
def report(server, tmp_path):
    """A report of two translations by the served model, with their real attention."""
    from attnkit.viz import write_report
    from attnkit.viz.records import AttentionRecord

    results = server.post(
        "v1/translate", {**body("numbers"), "inputs": ["dreiundzwanzig", "seventy-one"]}
    )
    records = [
        AttentionRecord(
            r["input"],
            r["source_tokens"],
            r["hypotheses"][0]["output"],
            r["hypotheses"][0]["tokens"],
            np.asarray(r["hypotheses"][0]["attention"]),
        )
        for r in results["results"]
    ]
    return write_report(tmp_path / "report.html", "browser", {"acc": 0.5}, records), records


def test_report_inlines_the_renderer_the_page_serves(server, report):
    path, _ = report
    served = server.get("static/heatmap.js").text
    assert "AttnkitHeatmap" in served and served in path.read_text(encoding="utf-8")


def test_report_draws_its_heatmap_with_the_shared_renderer(driver, report):
    path, records = report
    driver.get(path.as_uri())
    severe(driver)
    examples = driver.find_elements(By.CSS_SELECTOR, "li.ex")
    assert len(examples) == len(records)
    rec = records[1]  # pictured: drawn live from the start, as a click draws the others
    one = 'li.ex[data-i="1"]'
    drawn = wait_cells(driver, len(rec.output_tokens) * len(rec.source_tokens), one + " td.hm-cell")
    cols = len(rec.source_tokens)
    ActionChains(driver).move_to_element(drawn[cols + 1]).perform()
    readout = driver.find_element(By.CSS_SELECTOR, one + " .hm-readout")
    expected = (
        f"{show(rec.output_tokens[1])} <- {show(rec.source_tokens[1])}: {rec.weights[1, 1]:.3f}"
    )
    wait(driver, lambda d: readout.text == expected, "the hovered weight")
    assert severe(driver) == []


def test_vision_report_draws_every_step_with_the_shared_renderer(driver, checkpoints, tmp_path):
    from attnkit.families.vision.evaluate import evaluate_to_dir

    directory = dict(checkpoints)["digits"]
    out = tmp_path / "eval"
    evaluate_to_dir(directory, device="cpu", out_dir=out)
    driver.get((out / "report.html").as_uri())
    shown = driver.find_elements(By.CSS_SELECTOR, "li.img")
    boxes = driver.find_elements(By.CSS_SELECTOR, "li.img .steps")
    assert len(boxes) == len(shown) > 0
    first = boxes[0].find_elements(By.CSS_SELECTOR, ".ov-cell")
    assert len(first) > 1  # the regions of its one attention map
    weights = [float(c.get_attribute("data-w")) for c in first]
    assert sum(weights) == pytest.approx(1.0, abs=1e-3)
    assert severe(driver) == []


def test_a_transformers_report_chooses_among_its_layers_and_heads(driver, server, tmp_path):
    from attnkit.viz import write_report
    from attnkit.viz.records import AttentionRecord

    (r,) = server.post("v1/translate", body("transformer", rollout=True))["results"]
    hyp = r["hypotheses"][0]
    rec = AttentionRecord(
        r["input"],
        r["source_tokens"],
        hyp["output"],
        hyp["tokens"],
        np.asarray(hyp["attention"]),
        heads=np.asarray(hyp["layers"]),
        rollout=np.asarray(r["rollout"]),
        flow=np.asarray(r["flow"]),
    )
    path = write_report(tmp_path / "report.html", "transformer", {}, [rec])
    driver.get(path.as_uri())
    driver.find_element(By.CSS_SELECTOR, "li.ex").click()
    n = len(rec.output_tokens) * len(rec.source_tokens)
    wait_cells(driver, n, "li.ex td.hm-cell")
    choice = driver.find_element(By.CSS_SELECTOR, "li.ex select.heads")
    options = [o.text for o in choice.find_elements(By.TAG_NAME, "option")]
    assert options[0] == "mean of all layers and heads" and len(options) == 1 + 2 * 2 + 2
    assert options[-2:] == ["attention rollout (all layers)", "attention flow (all layers)"]
    for value, wanted, what in (
        ("1,0", rec.heads[:, 1, 0].ravel(), "layer 2, head 1's map"),
        ("rollout", rec.rollout.ravel(), "the rollout"),
        ("flow", rec.flow.ravel(), "the flow"),
    ):
        driver.execute_script(
            "arguments[0].value = arguments[1]; arguments[0].dispatchEvent(new Event('change'));",
            choice,
            value,
        )

        def drawn(d, wanted=wanted):
            weights = [
                float(c.get_attribute("data-w"))
                for c in d.find_elements(By.CSS_SELECTOR, "li.ex td.hm-cell")
            ]
            return len(weights) == n and np.allclose(weights, wanted, atol=1e-4)

        wait(driver, drawn, what)
    assert severe(driver) == []


def judged(source: str, output: str, reference: str, index: int, chrf: float):
    """A translation's record as ``attnkit evaluate`` writes it: right when identical."""
    from attnkit.viz.records import AttentionRecord

    src, out = source.split() + ["</s>"], output.split() + ["</s>"]
    weights = np.random.default_rng(index).dirichlet(np.ones(len(src)), size=len(out))  # (T, S)
    right = output == reference
    return AttentionRecord(
        source,
        src,
        output,
        out,
        weights,
        reference,
        -0.1 * index,
        index=index,
        right=right,
        chrf=chrf,
    )


def test_a_report_filters_to_its_errors_and_sorts_them_by_length(driver, tmp_path):
    from attnkit.viz import Tally, write_report

    records = [
        judged("ein mann", "a man", "a man", 0, 100.0),
        judged("ein kleines rotes haus am see", "a red house", "a small red house", 1, 40.0),
        judged("zwei hunde", "two dogs", "two dogs", 2, 100.0),
        judged("eine katze", "a dog", "a cat", 3, 35.0),
        judged("ein sehr alter mann", "an old man", "a very old man", 4, 60.0),
    ]
    page = write_report(tmp_path / "report.html", "t", {}, records, tally=Tally(3, 50))
    driver.get(page.as_uri())
    listed = driver.find_elements(By.CSS_SELECTOR, "li.ex")
    status = [li.get_attribute("data-status") for li in listed]
    assert status == ["wrong"] * 3 + ["right"] * 2  # the errors first
    assert driver.find_element(By.CSS_SELECTOR, ".tally").text == "3 not identical of 50"

    Select(driver.find_element(By.ID, "ex-filter")).select_by_value("wrong")
    Select(driver.find_element(By.ID, "ex-sort")).select_by_value("len")
    visible = [li for li in driver.find_elements(By.CSS_SELECTOR, "li.ex") if li.is_displayed()]
    wrong = [r for r in records if not r.right]
    by_length = sorted(wrong, key=lambda r: len(r.source_tokens))
    assert [int(li.get_attribute("data-i")) for li in visible] == [
        records.index(r) for r in by_length
    ]
    assert [li.find_element(By.CSS_SELECTOR, ".row .v").text for li in visible] == [
        r.source for r in by_length
    ]
    assert driver.find_element(By.ID, "ex-showing").text == f"showing 3 of {len(records)}"
    assert "chrF 35.0" in visible[0].text  # chrF where another task would say "wrong"

    # the pictured examples are live maps from the start, as a click draws them (one rendering):
    # the shortest error's map, its reference beside it
    shortest = by_length[0]
    drawn = visible[0].find_elements(By.CSS_SELECTOR, ".pic[data-live] td.hm-cell")
    assert len(drawn) == shortest.weights.size
    assert not driver.find_elements(By.CSS_SELECTOR, "li.ex .pic img")  # no still picture left
    beside = visible[0].find_element(By.CSS_SELECTOR, ".pic .beside")
    assert shortest.reference in beside.text
    visible[0].find_element(By.CSS_SELECTOR, ".row").click()  # a click on its text closes it
    assert not visible[0].find_elements(By.CSS_SELECTOR, ".pic")

    Select(driver.find_element(By.ID, "ex-filter")).select_by_value("right")
    shown = [li for li in driver.find_elements(By.CSS_SELECTOR, "li.ex") if li.is_displayed()]
    assert [li.get_attribute("data-status") for li in shown] == ["right", "right"]
    assert severe(driver) == []


def test_a_reports_maps_outline_the_gold_links(driver, tmp_path):
    from attnkit.viz import write_report
    from attnkit.viz.records import AttentionRecord

    weights = np.full((2, 3), 1 / 3)
    rec = AttentionRecord("ab", ["a", "b", "</s>"], "1", ["1", "</s>"], weights, gold=[(0, 1)])
    path = write_report(tmp_path / "report.html", "gold", {}, [rec])
    driver.get(path.as_uri())
    driver.find_element(By.CSS_SELECTOR, "li.ex").click()
    cells = wait_cells(driver, 6, "li.ex td.hm-cell")
    outlined = [k for k, c in enumerate(cells) if "hm-gold" in c.get_attribute("class")]
    assert outlined == [1]  # row 0, column 1
    assert severe(driver) == []


def test_an_explain_reports_map_toggles_to_the_saliency(driver, tmp_path):
    from attnkit.viz import write_report
    from attnkit.viz.records import AttentionRecord

    weights = np.array([[0.7, 0.2, 0.1], [0.1, 0.1, 0.8]])
    saliency = np.array([[0.2, 0.5, 0.3], [0.6, 0.3, 0.1]])
    rec = AttentionRecord("ab", ["a", "b", "</s>"], "1", ["1", "</s>"], weights, saliency=saliency)
    path = write_report(tmp_path / "report.html", "explain", {}, [rec])
    driver.get(path.as_uri())
    driver.find_element(By.CSS_SELECTOR, "li.ex").click()
    wait_cells(driver, 6, "li.ex td.hm-cell")
    choice = driver.find_element(By.CSS_SELECTOR, "li.ex select.heads")
    assert [o.text for o in choice.find_elements(By.TAG_NAME, "option")] == [
        "attention",
        "saliency (implicit attention)",
    ]
    driver.execute_script(
        "arguments[0].value = 'saliency'; arguments[0].dispatchEvent(new Event('change'));", choice
    )

    def drawn(d):
        cells = d.find_elements(By.CSS_SELECTOR, "li.ex td.hm-cell")
        got = [float(c.get_attribute("data-w")) for c in cells]
        return len(got) == 6 and np.allclose(got, saliency.ravel(), atol=1e-4)

    wait(driver, drawn, "the saliency map")
    assert severe(driver) == []
