"""Sentence classification data: the Stanford Sentiment Treebank and a user's TSV.

**SST** (Socher et al. 2013), its PTB-tree release: ``train.txt`` (8,544 sentences),
``dev.txt`` (1,101) and ``test.txt`` (2,210), one sentence a line as a binarized tree whose
every node carries a label 0-4 (very negative .. very positive)::

    (3 (2 (2 The) (2 Rock)) (4 (3 (2 is) ...) (2 .)))

The leaves, in order, are the tokenized sentence (PTB tokens: ``-LRB-`` for "(", ``n't``,
``'s``); the root's label is the sentence's. ``classes: 5`` keeps the five labels (SST-5);
``classes: 2`` drops neutral (2) and maps 0-1 to negative, 3-4 to positive (SST-2: 6,920 / 872
/ 1,821 sentences). ``phrases: true`` trains on every node of the training trees, each distinct
phrase once with the label of its first occurrence (the phrase-level training of the RNTN and
of Kim's CNNs); dev and test are always whole sentences.

**TSV**: one example a line, ``label<TAB>text``; the text is tokenized as :func:`tokenize`
tokenizes a typed sentence. The labels are the distinct labels of the training file, sorted,
unless the config lists them.

A malformed tree, an empty sentence or an unknown label is a :class:`DataError` naming the
file and line. The SST is not downloaded (the Stanford release is a zip file): copy the three
files of ``trainDevTestTrees_PTB.zip`` into the data directory; their sha256 are checked.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from attnkit.data.bounded import text_lines
from attnkit.data.download import ensure_files
from attnkit.errors import DataError

TRAIN_FILE, DEV_FILE, TEST_FILE = "train.txt", "dev.txt", "test.txt"
SPLIT_FILES = {"train": TRAIN_FILE, "dev": DEV_FILE, "test": TEST_FILE}
SHA256 = {
    TRAIN_FILE: "e2f3f41b0b1e6d4dddc0effe3bfc2d27ed8928079aa9a03d652311614fc5feb7",
    DEV_FILE: "0e9336aed6e4730e19f58d00a77b3f0297efdb755f7b5e598c98a05e3f97ea40",
    TEST_FILE: "6e54806dee95cf80cd918e7dfb3f6770f6df24bf826f289a4d1f709e1c8f6761",
}
HOME = "https://nlp.stanford.edu/sentiment/ (trainDevTestTrees_PTB.zip)"
SST5_LABELS = ("very negative", "negative", "neutral", "positive", "very positive")
SST2_LABELS = ("negative", "positive")
#: PTB's names of brackets in the trees, and back
BRACKETS = {"(": "-LRB-", ")": "-RRB-", "[": "-LSB-", "]": "-RSB-", "{": "-LCB-", "}": "-RCB-"}

#: words are split on ASCII blanks only: a word may hold a no-break space ("8\u00a01\\/2")
_TREE_TOKEN = re.compile(r"\(|\)|[^ \t\r\n\f\v()]+")
_WORD = re.compile(r"n't\b|'(?:s|re|ve|ll|d|m)\b|[\w\-]+(?:\.[\w\-]+)*|\S")


@dataclass
class Example:
    """One sentence (or phrase): its tokens and its label's index."""

    words: list[str]
    label: int
    line: int = 0  # where it was read (1-based), for messages


@dataclass
class Tree:
    """A parsed tree: the leaves in order, the root label, and every node's ``(label, start,
    end)`` span over the leaves (the root's is ``(label, 0, len(words))``)."""

    words: list[str]
    label: int
    spans: list[tuple[int, int, int]] = field(default_factory=list)


def parse_tree(text: str) -> Tree:
    """A PTB-style sentiment tree -> :class:`Tree`; ValueError saying what is wrong.

    A node is ``(LABEL WORD)`` (a leaf) or ``(LABEL NODE NODE ...)``; labels are 0-4.
    """
    tokens = _TREE_TOKEN.findall(text)
    if not tokens:
        raise ValueError("empty sentence")
    if tokens[0] != "(":
        raise ValueError(f"expected '(' at the start of a tree, got {tokens[0]!r}")
    words: list[str] = []
    spans: list[tuple[int, int, int]] = []
    stack: list[list] = []  # [label, start, has_word, has_children]
    i, root = 0, None
    while i < len(tokens):
        token = tokens[i]
        if root is not None:
            raise ValueError(f"text after the end of the tree: {token!r}")
        if token == "(":
            if i + 1 >= len(tokens) or tokens[i + 1] in "()":
                raise ValueError("a node without a label")
            label = tokens[i + 1]
            if label not in ("0", "1", "2", "3", "4"):
                raise ValueError(f"unknown label {label!r} (the labels are 0-4)")
            if stack:
                if stack[-1][2]:
                    raise ValueError("a node holds both a word and other nodes")
                stack[-1][3] = True
            stack.append([int(label), len(words), False, False])
            i += 2
            continue
        if token == ")":  # the stack holds the root at least: a closed root ends the loop
            label, start, _, _ = stack.pop()
            if len(words) == start:
                raise ValueError("empty sentence" if not stack else "a node with no word under it")
            spans.append((label, start, len(words)))
            if not stack:
                root = label
        else:
            if not stack:
                raise ValueError(f"a word outside any node: {token!r}")
            node = stack[-1]
            if node[2] or node[3]:
                raise ValueError(f"a leaf holds more than one word or node: {token!r}")
            node[2] = True
            words.append(token)
        i += 1
    if stack:
        raise ValueError(f"unbalanced '(': {len(stack)} node(s) not closed")
    return Tree(words, root, spans)


def _lines(path: Path) -> Iterable[tuple[int, str]]:
    """(line number, text) of each non-blank line, read with the bounds of
    :func:`attnkit.data.bounded.text_lines` (a regular file, size and line caps); DataError
    naming the file (and line) otherwise."""
    return text_lines(path)


def sst_label(label: int, classes: int) -> int | None:
    """A 0-4 tree label as the class index of SST-``classes`` (None: dropped, neutral in SST-2)."""
    if classes == 5:
        return label
    return None if label == 2 else int(label > 2)


def read_trees(
    path: str | Path, classes: int = 2, phrases: bool = False, lowercase: bool = False
) -> list[Example]:
    """The sentences of a tree file as examples of SST-``classes`` (2 or 5); ``phrases``: every
    node's phrase once instead (the first label seen of each). DataError naming file:line."""
    path = Path(path)
    out: list[Example] = []
    seen: set[tuple[str, ...]] = set()
    for number, line in _lines(path):
        try:
            tree = parse_tree(line)
        except ValueError as exc:
            raise DataError(f"{path}:{number}: {exc}") from None
        words = [w.lower() for w in tree.words] if lowercase else tree.words
        spans = tree.spans if phrases else [(tree.label, 0, len(words))]
        for label, start, end in spans:
            target = sst_label(label, classes)
            span = tuple(words[start:end])
            if target is None or (phrases and span in seen):
                continue
            seen.add(span)
            out.append(Example(list(span), target, number))
    return out


def sst_splits(
    directory: str | Path, classes: int = 2, phrases: bool = False, lowercase: bool = False
) -> dict[str, list[Example]]:
    """train / dev / test of the SST in ``directory`` (checksums verified)."""
    directory = ensure_files(directory, SHA256, base_url=None, folder="sst")
    return {
        name: read_trees(directory / file, classes, phrases and name == "train", lowercase)
        for name, file in SPLIT_FILES.items()
    }


def tokenize(text: str, lowercase: bool = False) -> list[str]:
    """A typed sentence as PTB-like tokens (``n't`` and ``'s`` split off, punctuation alone,
    brackets as ``-LRB-``): the tokens the SST's trees hold."""
    tokens = [BRACKETS.get(t, t) for t in _WORD.findall(text.replace("n't", " n't"))]
    return [t.lower() for t in tokens] if lowercase else tokens


def read_tsv(
    path: str | Path, labels: Sequence[str] | None = None, lowercase: bool = False
) -> tuple[list[Example], list[str]]:
    """``label<TAB>text`` lines -> (examples, labels). ``labels`` given: a label outside it is
    a DataError naming file:line; else the labels are the file's distinct ones, sorted."""
    path = Path(path)
    rows = []
    for number, line in _lines(path):
        label, tab, text = line.partition("\t")
        label = label.strip()
        if not tab or not label:
            raise DataError(f"{path}:{number}: expected 'label<TAB>text'")
        words = tokenize(text, lowercase)
        if not words:
            raise DataError(f"{path}:{number}: empty sentence")
        rows.append((number, label, words))
    if not rows:
        raise DataError(f"{path}: no examples")
    names = list(labels) if labels is not None else sorted({label for _, label, _ in rows})
    index = {name: i for i, name in enumerate(names)}
    examples = []
    for number, label, words in rows:
        if label not in index:
            raise DataError(
                f"{path}:{number}: unknown label {label!r}; the labels are {', '.join(names)}"
            )
        examples.append(Example(words, index[label], number))
    return examples, names
