"""The explorer page's own logic, run in node where it is installed (the page in a real browser:
tests/browser/test_explorer.py): errors in plain words, and a drawn digit boxed and centred the
way MNIST's are."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from attnkit.families.serving import Limits

STATIC = Path(__file__).resolve().parents[2] / "src" / "attnkit" / "serve" / "static"
NODE = shutil.which("node")


def run_page_js(expression: str):
    """``expression`` evaluated in node after text.js and vision.js loaded, as JSON."""
    if NODE is None:
        pytest.skip("no node: apt-get install nodejs (the page's functions run in it)")
    script = (
        "global.window = {}; global.document = {addEventListener() {}};"
        f"require({json.dumps(str(STATIC / 'text.js'))});"
        f"require({json.dumps(str(STATIC / 'vision.js'))});"
        f"console.log(JSON.stringify({expression}));"
    )
    done = subprocess.run([NODE, "-e", script], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_an_api_error_names_its_field_once_in_plain_words():
    cases = [
        ["beam", "beam: Input should be less than or equal to 10"],
        ["beam", "beam: Input should be greater than or equal to 1"],
        ["inputs[0]", "inputs[0]: String should have at most 500 characters"],
        [None, "the server did not answer (is attnkit serve running?)"],
    ]
    shown = run_page_js(f"{json.dumps(cases)}.map(c => window.AttnkitText.plainError(c[0], c[1]))")
    assert shown == [
        "beam: at most 10",
        "beam: at least 1",
        "inputs[0]: at most 500 characters",
        "the server did not answer (is attnkit serve running?)",
    ]


def test_a_drawn_digit_is_boxed_scaled_to_20_and_centred_by_its_mass():
    # a 10 x 50 bar at (70, 10) of a 100 x 100 pad: scaled by 20/50, its centre to (14, 14)
    box = run_page_js(
        "(() => { const g = new Float32Array(100 * 100);"
        " for (let y = 10; y < 60; y++) for (let x = 70; x < 80; x++) g[y * 100 + x] = 255;"
        " return window.AttnkitVision.digitBox(g, 100, 100); })()"
    )
    assert (box["x"], box["y"], box["w"], box["h"]) == (70, 10, 10, 50)
    assert box["scale"] == pytest.approx(0.4)
    assert box["dx"] + box["w"] * box["scale"] / 2 == pytest.approx(14)
    assert box["dy"] + box["h"] * box["scale"] / 2 == pytest.approx(14)
    # mass off the box's middle moves the box, never out of the frame
    heavy = run_page_js(
        "(() => { const g = new Float32Array(50 * 50); g[0] = 255; g[49 * 50 + 49] = 1;"
        " return window.AttnkitVision.digitBox(g, 50, 50); })()"
    )
    assert heavy["dx"] == pytest.approx(8) and heavy["dy"] == pytest.approx(8)
    assert run_page_js("window.AttnkitVision.digitBox(new Float32Array(4), 2, 2)") is None


def test_the_page_takes_its_beam_limit_from_the_server_and_fits_a_phone():
    page = (STATIC / "index.html").read_text()
    assert f'id="beam" type="number" min="1" max="{Limits().max_beam}"' in page
    assert "m.limits.max_beam" in (STATIC / "text.js").read_text()
    css = (STATIC / "style.css").read_text()
    assert (
        "#heatmap,#sbs-maps{max-width:100%;overflow-x:auto}" in css and "@media (max-width:" in css
    )
