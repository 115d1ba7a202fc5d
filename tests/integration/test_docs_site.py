"""The docs build as a site (mkdocs.yml, docs/hooks.py): ``mkdocs build --strict`` passes, so a
link to a missing file or heading fails it; the home page, the API reference generated from the
docstrings and every lesson with its picture are in the output; the reference lists every name
``import attnkit`` gives."""

import re
import subprocess
import sys
from pathlib import Path

import pytest
from repo_scripts import load_script

REPO_ROOT = Path(__file__).resolve().parents[2]


def _hooks():
    return load_script("docs/hooks.py", "docs_hooks")


def test_the_reference_lists_every_public_name():
    import attnkit

    text = (REPO_ROOT / "docs" / "reference.md").read_text(encoding="utf-8")
    headings = set(re.findall(r"^ +heading: attnkit\.(\w+)$", text, flags=re.M))
    assert headings == set(attnkit.__all__)


def test_links_leaving_docs_are_pointed_at_the_pages_the_site_shows():
    hooks = _hooks()
    text = "\n".join(
        [
            "[api](docs/API.md#python) ![p](docs/images/a.png) [web](https://x.org/a.md)",
            "```bash",
            "[kept](docs/API.md)",
            "```",
            "[lesson](notebooks/01_weighted_average.py) [gone](configs/x.yaml) [top](#here)",
        ]
    )
    out = hooks.rewrite_links(text, "README.md", "index.md").split("\n")
    assert out[0] == "[api](API.md#python) ![p](images/a.png) [web](https://x.org/a.md)"
    assert out[2] == "[kept](docs/API.md)"  # code is left alone
    # a file the site does not show keeps its link, which --strict then reports
    assert out[4] == "[lesson](lessons/01_weighted_average.md) [gone](configs/x.yaml) [top](#here)"
    text = "[r](../../README.md) [c](../../CHANGELOG.md) [a](../API.md)"
    out = hooks.rewrite_links(text, "docs/results/H.md", "results/H.md")
    assert out == "[r](../index.md) [c](../CHANGELOG.md) [a](../API.md)"
    index = "[l](01_a.py) ![i](../docs/images/l.png) [d](../docs/RESULTS.md#x)"
    assert hooks.rewrite_links(index, "notebooks/README.md", "lessons/index.md") == (
        "[l](01_a.md) ![i](../images/l.png) [d](../RESULTS.md#x)"
    )


def test_each_lesson_picture_is_read_with_its_caption():
    hooks = _hooks()
    index = "\n".join(
        [
            "| 1: a band | 2: a curve |",
            "|---|---|",
            "| ![lesson 1](../docs/images/one.png) | ![lesson 2](../docs/images/two.png) |",
        ]
    )
    assert hooks.lesson_pictures(index) == {
        "01": ("../docs/images/one.png", "a band"),
        "02": ("../docs/images/two.png", "a curve"),
    }


def test_mkdocs_build_strict_makes_the_site(tmp_path):
    pytest.importorskip("mkdocs", reason='the docs extra: pip install -e ".[docs]"')
    pytest.importorskip("mkdocstrings")
    site = tmp_path / "site"
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    home = (site / "index.html").read_text(encoding="utf-8")
    assert 'href="API/#' in home or 'href="API/"' in home  # the README's docs/API.md, rewritten
    reference = (site / "reference" / "index.html").read_text(encoding="utf-8")
    assert 'id="attnkit.api.loading.load"' in reference
    assert "as the model object of its family" in reference  # load's docstring
    assert ":class:" not in reference  # the docstrings' roles are dropped
    lessons = sorted((REPO_ROOT / "notebooks").glob("[0-9][0-9]_*.py"))
    for lesson in lessons:
        page = (site / "lessons" / lesson.stem / "index.html").read_text(encoding="utf-8")
        assert "<code" in page, lesson.name  # its code cells
    page = (site / "lessons" / "01_weighted_average" / "index.html").read_text(encoding="utf-8")
    picture = re.search(r'<img alt="[^"]+" src="([^"]+lesson_01\.png)"', page)
    assert picture is not None
    assert (site / "lessons" / "01_weighted_average" / picture.group(1)).resolve().is_file()
