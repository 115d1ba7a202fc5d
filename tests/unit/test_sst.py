"""The SST reader (PTB sentiment trees) and the user's TSV: the tree format's edge cases, SST-2
and SST-5, phrase-level examples, and bad input as one line naming file:line."""

from __future__ import annotations

import re

import pytest

from attnkit.data.tasks import sst
from attnkit.errors import DataError

TREE = "(3 (2 (2 The) (2 film)) (4 (3 (2 is) (4 gripping)) (2 .)))"


def test_a_tree_gives_its_leaves_in_order_the_root_label_and_every_span():
    tree = sst.parse_tree(TREE)
    assert tree.words == ["The", "film", "is", "gripping", "."]
    assert tree.label == 3
    assert {(3, 0, 5), (4, 2, 5), (3, 2, 4), (4, 3, 4), (2, 0, 2)} <= set(tree.spans)
    assert len(tree.spans) == 9  # 5 leaves + 4 inner nodes of a binary tree


@pytest.mark.parametrize(
    "text, words",
    [
        ("(2 word)", ["word"]),  # a one-word sentence: the root is a leaf
        ("(1 (2 8\u00a01\\/2) (2 -LRB-))", ["8\u00a01\\/2", "-LRB-"]),  # no-break space inside
        ("  (4 (4 a)\t(3 b))  ", ["a", "b"]),  # blanks around and between nodes
        ("(0 (1 (2 a) (2 b) (2 c)))", ["a", "b", "c"]),  # a node of three children
        ("(2 (2 n't) (2 's))", ["n't", "'s"]),
    ],
)
def test_tree_edge_cases(text, words):
    assert sst.parse_tree(text).words == words


@pytest.mark.parametrize(
    "text, problem",
    [
        ("(2 (2 a) (2 b)", "unbalanced '('"),
        ("(2 (2 a)))", "text after the end of the tree: ')'"),
        ("(7 (2 a))", "unknown label '7'"),
        ("(x (2 a))", "unknown label 'x'"),
        ("((2 a))", "without a label"),
        ("(2 )", "empty sentence"),
        ("(2 (2 a) ())", "without a label"),
        ("(2 (2 ) (2 b))", "no word under it"),
        ("(2 a b)", "more than one word"),
        ("(2 a (2 b))", "both a word and other nodes"),
        ("(2 (2 a)) (2 (2 b))", "after the end of the tree"),
        ("word (2 a)", "expected '('"),
    ],
)
def test_a_malformed_tree_says_what_is_wrong(text, problem):
    with pytest.raises(ValueError, match=re.escape(problem)):
        sst.parse_tree(text)


def test_bad_lines_are_one_error_naming_file_and_line(tmp_path):
    path = tmp_path / "train.txt"
    path.write_text(f"{TREE}\n\n{TREE}\n(2 (2 a) (9 b))\n", encoding="utf-8")
    with pytest.raises(DataError) as caught:
        sst.read_trees(path)
    assert str(caught.value) == f"{path}:4: unknown label '9' (the labels are 0-4)"
    path.write_bytes(b"(2 \xff)\n")
    with pytest.raises(DataError, match="not UTF-8"):
        sst.read_trees(path)
    with pytest.raises(DataError, match="file not found"):
        sst.read_trees(tmp_path / "absent.txt")


def test_sst2_drops_neutral_and_joins_the_two_ends(tmp_path):
    path = tmp_path / "t.txt"
    lines = [f"({label} (2 w{label}))" for label in range(5)]
    path.write_text("\r\n".join(lines) + "\r\n", encoding="utf-8")  # CRLF line ends
    assert [e.label for e in sst.read_trees(path, classes=5)] == [0, 1, 2, 3, 4]
    two = sst.read_trees(path, classes=2)
    assert [(e.words, e.label) for e in two] == [(["w0"], 0), (["w1"], 0), (["w3"], 1), (["w4"], 1)]
    assert [e.line for e in two] == [1, 2, 4, 5]


def test_phrases_are_every_node_once_with_its_first_label(tmp_path):
    path = tmp_path / "t.txt"
    path.write_text(f"{TREE}\n(1 (1 (2 The) (1 film)) (2 .))\n", encoding="utf-8")
    phrases = sst.read_trees(path, classes=5, phrases=True, lowercase=True)
    by_words = {tuple(e.words): e.label for e in phrases}
    assert len(by_words) == len(phrases)  # distinct
    assert by_words[("the", "film", "is", "gripping", ".")] == 3
    assert by_words[("film",)] == 2  # the first tree's label, not the second's 1
    assert by_words[("the", "film", ".")] == 1
    sentences = sst.read_trees(path, classes=2, phrases=True)
    assert all(e.label in (0, 1) for e in sentences)  # neutral phrases dropped too


def test_the_shared_sst_has_the_published_split_sizes(shared_data):
    splits = sst.sst_splits(shared_data("sst"), classes=2)
    assert {k: len(v) for k, v in splits.items()} == {"train": 6920, "dev": 872, "test": 1821}
    five = sst.sst_splits(shared_data("sst"), classes=5)
    assert {k: len(v) for k, v in five.items()} == {"train": 8544, "dev": 1101, "test": 2210}


def test_tokenize_splits_as_the_trees_do():
    assert sst.tokenize("The film's (not) bad, isn't it?") == [
        "The", "film", "'s", "-LRB-", "not", "-RRB-", "bad", ",", "is", "n't", "it", "?",
    ]  # fmt: skip
    assert sst.tokenize("A Gripping Film", lowercase=True) == ["a", "gripping", "film"]
    assert sst.tokenize("   ") == []


def test_tsv_labels_are_sorted_or_given_and_bad_rows_name_their_line(tmp_path):
    path = tmp_path / "a.tsv"
    path.write_text("pos\tA fine film\nneg\tdull\n\npos\tgood\n", encoding="utf-8")
    examples, labels = sst.read_tsv(path)
    assert labels == ["neg", "pos"]
    assert [(e.words, e.label, e.line) for e in examples][:2] == [
        (["A", "fine", "film"], 1, 1),
        (["dull"], 0, 2),
    ]
    with pytest.raises(DataError) as caught:
        sst.read_tsv(path, labels=["neg", "neutral"])
    assert str(caught.value) == f"{path}:1: unknown label 'pos'; the labels are neg, neutral"
    for text, problem in [("pos\t   \n", "empty sentence"), ("pos ok\n", "label<TAB>text")]:
        path.write_text("neg\tfine\n" + text, encoding="utf-8")
        with pytest.raises(DataError, match=f"^{path}:2: .*{problem}"):
            sst.read_tsv(path)
