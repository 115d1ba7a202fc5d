"""MkDocs hooks (``mkdocs.yml``: ``hooks``): the site shows the repository's own documents as they
read on GitHub. The README is the home page, CHANGELOG.md a page, notebooks/README.md the lessons'
index, and each lesson (a jupytext percent file, notebooks/NN_*.py) a page: its Markdown cells as
text, its code cells as code, not run, with the picture notebooks/README.md shows for it. Nothing
is written to disk. Relative links keep their repository form in the sources (tests/unit/
test_docs.py checks them there) and are rewritten to the site's paths while the site builds; a
link to a file the site does not show is left as it is, and ``mkdocs build --strict`` fails on it.
"""

from __future__ import annotations

import posixpath
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LESSON = re.compile(r"notebooks/(\d\d)_\w+\.py")
LINK = re.compile(r"(!?\[[^\]]*\]\()([^)\s]+)")
FENCE = re.compile(r"^\s*(```|~~~)")
SCHEME = re.compile(r"^[a-z][a-z0-9+.-]*:")

# repository path -> site path of each page the hooks add (filled by on_files)
_ADDED: dict[str, str] = {}


def site_path(repo_path: str) -> str | None:
    """Where the file at ``repo_path`` (relative to the repository's root, ``/``-separated) is in
    the site, or None where the site does not show it."""
    if repo_path.startswith("docs/"):
        return repo_path.removeprefix("docs/")
    if repo_path == "README.md":
        return "index.md"
    if repo_path == "CHANGELOG.md":
        return "CHANGELOG.md"
    if repo_path in ("notebooks", "notebooks/README.md"):
        return "lessons/index.md"
    if LESSON.fullmatch(repo_path):
        return "lessons/" + Path(repo_path).stem + ".md"
    return None


def rewrite_links(markdown: str, repo_path: str, page_site_path: str) -> str:
    """``markdown`` (the file at ``repo_path``, shown at ``page_site_path``) with each relative
    link outside code blocks pointing where its target is in the site."""
    here = posixpath.dirname(repo_path)
    page_dir = posixpath.dirname(page_site_path) or "."

    def one(match: re.Match) -> str:
        target = match.group(2)
        path, hash_, anchor = target.partition("#")
        if not path or SCHEME.match(target):
            return match.group(0)
        found = site_path(posixpath.normpath(posixpath.join(here, path)))
        if found is None:
            return match.group(0)
        return match.group(1) + posixpath.relpath(found, page_dir) + hash_ + anchor

    lines, fenced = [], False
    for line in markdown.split("\n"):
        if FENCE.match(line):
            fenced = not fenced
        lines.append(line if fenced else LINK.sub(one, line))
    return "\n".join(lines)


def lesson_pictures(index: str) -> dict[str, tuple[str, str]]:
    """Lesson number -> (picture path relative to notebooks/, caption), read from the picture
    tables of notebooks/README.md: a header row of ``N: caption`` cells, a row of images below."""
    rows = index.split("\n")
    found = {}
    for at, row in enumerate(rows):
        images = re.findall(r"!\[lesson (\d+)\]\(([^)\s]+)\)", row)
        if not images or at < 2:
            continue
        captions = [cell.strip() for cell in rows[at - 2].strip().strip("|").split("|")]
        for (number, path), caption in zip(images, captions):
            found[f"{int(number):02d}"] = (path, caption.partition(":")[2].strip())
    return found


def lesson_markdown(path: Path, picture: tuple[str, str] | None) -> str:
    """The lesson at ``path`` (a jupytext percent file) as Markdown: its Markdown cells as they
    are, its code cells fenced, and ``picture`` (path relative to notebooks/, caption) after the
    title."""
    import jupytext  # only when the site builds

    cells = jupytext.read(path).cells
    parts = []
    for cell in cells:
        source = cell.source.strip("\n")
        if cell.cell_type == "markdown":
            parts.append(source)
        elif source.strip():
            parts.append(f"```python\n{source}\n```")
    title, _, rest = parts[0].partition("\n") if parts else ("", "", "")
    note = (
        f"*`notebooks/{path.name}`, shown without running it: open it as a notebook to run it "
        "and see its output ([how](README.md#open-them)).*"
    )
    head = [title, note]
    if picture is not None:
        head.append(f"![{picture[1]}]({picture[0]})\n\n*{picture[1]}*")
    return "\n\n".join([*head, rest.strip("\n"), *parts[1:]]) + "\n"


def on_files(files, config):
    """Add the pages that live outside docs/: the README, the changelog, the lessons."""
    from mkdocs.structure.files import File

    notebooks = ROOT / "notebooks"
    index = (notebooks / "README.md").read_text(encoding="utf-8")
    pictures = lesson_pictures(index)
    pages = {
        "README.md": (ROOT / "README.md").read_text(encoding="utf-8"),
        "CHANGELOG.md": (ROOT / "CHANGELOG.md").read_text(encoding="utf-8"),
        "notebooks/README.md": index,
    }
    for lesson in sorted(notebooks.glob("[0-9][0-9]_*.py")):  # links relative to notebooks/
        pages[f"notebooks/{lesson.name}"] = lesson_markdown(lesson, pictures.get(lesson.name[:2]))
    _ADDED.clear()
    for repo_path, content in pages.items():
        uri = site_path(repo_path)
        _ADDED[uri] = repo_path
        files.append(File.generated(config, uri, content=content))
    return files


def on_page_markdown(markdown, page, config, files):
    """Point the page's relative links at the site's paths."""
    uri = page.file.src_uri
    repo_path = _ADDED.get(uri, "docs/" + uri)
    return rewrite_links(markdown, repo_path, uri)


ROLE = re.compile(r":(?:class|func|meth|mod|attr|data|exc|obj):(?=<code>)")


def on_page_content(html, page, config, files):
    """Drop the Sphinx roles of the docstrings (``:class:`Run``` shows as ``Run``)."""
    return ROLE.sub("", html)
