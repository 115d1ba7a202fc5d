"""The human gold alignment reader (Hansards format): links, positions and malformed files."""

from __future__ import annotations

import pytest

from attnkit.data.tasks.human_gold import read_human_gold
from attnkit.errors import DataError


def _files(tmp_path, pairs: str, links: str):
    (tmp_path / "x.src-tgt").write_text(pairs, encoding="utf-8")
    (tmp_path / "x.gold").write_text(links, encoding="utf-8")
    return tmp_path / "x.src-tgt", tmp_path / "x.gold"


def test_links_are_read_zero_based_target_first_with_sure_inside_possible(tmp_path):
    pairs = read_human_gold(
        *_files(tmp_path, "the house ||| la maison\noh ! ||| oh !\n", "1-1 2p2\n2-2 1-1\n")
    )
    assert [p.source for p in pairs] == [["the", "house"], ["oh", "!"]]
    assert pairs[0].target == ["la", "maison"]
    assert pairs[0].gold.sure == {(0, 0)}  # 1-1: target 0 <- source 0
    assert pairs[0].gold.possible == {(0, 0), (1, 1)}  # 2p2 is possible only
    assert pairs[1].gold.sure == pairs[1].gold.possible == {(1, 1), (0, 0)}


@pytest.mark.parametrize(
    "pairs, links, message",
    [
        ("a b ||| c\n", "1-1\n2-1 x\n", "1 lines of links for|2 lines of links for"),
        ("a b | c\n", "1-1\n", r"x.src-tgt:1: expected 'source words \|\|\| target words'"),
        ("a ||| \n", "1-1\n", "x.src-tgt:1: an empty side"),
        ("a b ||| c\n", "1-2\n", r"x.gold:1: link 1-2: positions are 1..2 \(source\) and 1..1"),
        ("a b ||| c\n", "0-1\n", "x.gold:1: link 0-1"),
        ("a b ||| c\n", "1x1\n", "x.gold:1: '1x1' is not a link"),
    ],
)
def test_malformed_files_are_one_line_naming_file_and_line(tmp_path, pairs, links, message):
    with pytest.raises(DataError, match=message):
        read_human_gold(*_files(tmp_path, pairs, links))


def test_missing_and_non_utf8_files_are_named(tmp_path):
    with pytest.raises(DataError, match="nope.src-tgt: no such file"):
        read_human_gold(tmp_path / "nope.src-tgt", tmp_path / "nope.gold")
    src, gold = _files(tmp_path, "a ||| b\n", "1-1\n")
    src.write_bytes(b"\xff\xfe ||| b\n")
    with pytest.raises(DataError, match="x.src-tgt: not UTF-8"):
        read_human_gold(src, gold)


def test_the_shared_hansards_set_reads_whole(shared_data):
    directory = shared_data("gold_alignments")
    pairs = read_human_gold(directory / "enfr.src-tgt", directory / "enfr.gold")
    assert len(pairs) == 447
    assert all(p.gold.sure <= p.gold.possible for p in pairs)
    # every link stays inside its sentences
    assert all(j < len(p.target) and i < len(p.source) for p in pairs for j, i in p.gold.possible)
