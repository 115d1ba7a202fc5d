"""The bAbI reader: stories, questions, supporting facts, splits, and one-line errors."""

from __future__ import annotations

import hashlib

import pytest

from attnkit.data.babi import (
    CHECKSUMS,
    TASKS,
    BabiConfig,
    load_splits,
    parse_stories,
    read_file,
    task_file,
    words,
)
from attnkit.errors import ConfigError, DataError

STORY = (
    "1 Mary moved to the bathroom.\n"
    "2 John went to the hallway.\n"
    "3 Where is Mary? \tbathroom\t1\n"
    "4 Daniel went back to the hallway.\n"
    "5 Where is Daniel? \thallway\t4\n"
    "1 Sandra travelled to the office.\n"
    "2 Sandra went to the bathroom.\n"
    "3 Where is Sandra? \tbathroom\t2\n"
)


def test_questions_see_the_facts_of_their_story_before_them():
    qs = parse_stories(STORY, "s.txt", task=1)
    assert [q.question for q in qs] == ["Where is Mary?", "Where is Daniel?", "Where is Sandra?"]
    assert qs[0].memories == ("Mary moved to the bathroom.", "John went to the hallway.")
    # question lines are not memories, but they count in the line ids
    assert qs[1].memories[-1] == "Daniel went back to the hallway."
    assert qs[1].supporting == (2,)
    # a new story (ids restart at 1) forgets the old one
    assert qs[2].memories == ("Sandra travelled to the office.", "Sandra went to the bathroom.")
    assert qs[2].supporting == (1,) and qs[2].answer == "bathroom"
    assert qs[2].where == "s.txt:8" and qs[2].task == 1


def test_memory_size_keeps_the_latest_facts_and_moves_the_supporting_ids():
    text = "".join(f"{i} Fact number {i}.\n" for i in range(1, 6)) + "6 Q? \tx\t2 5\n"
    (q,) = parse_stories(text, memory_size=3)
    assert q.memories == ("Fact number 3.", "Fact number 4.", "Fact number 5.")
    assert q.supporting == (2,)  # fact 2 fell out of the memory; fact 5 is the last kept


def test_answers_are_one_token_even_when_they_list_several_words():
    (q,) = parse_stories("1 A is north of B.\n2 How do you go from B to A? \tN,S\t1\n")
    assert q.answer == "n,s"
    assert words("How do you go, from B?") == ["how", "do", "you", "go,", "from", "b"]


@pytest.mark.parametrize(
    ("text", "line", "says"),
    [
        ("1 Mary went home.\nMary went home.\n", 2, "neither a fact"),
        ("1 Mary went home.\n2\n", 2, "neither a fact"),
        ("1 Where is Mary? \tkitchen\t1\n", 1, "before any fact"),
        ("1 Mary went home.\n2 Where is Mary? \thome\t7\n", 2, "supporting id '7'"),
        ("1 Mary went home.\n2 Where is Mary? \thome\t2\n", 2, "supporting id '2'"),
        ("1 Mary went home.\n2 Where is Mary? \thome\tone\n", 2, "supporting id 'one'"),
        ("1 Mary went home.\n2 Where is Mary? \thome\n", 2, "2 tab-separated fields"),
        ("1 Mary went home.\n3 John went out.\n", 2, "line id 3 after 1"),
    ],
)
def test_bad_input_is_one_line_naming_file_and_line(text, line, says):
    with pytest.raises(DataError) as err:
        parse_stories(text, "mine.txt")
    message = str(err.value)
    assert message.startswith(f"mine.txt:{line}: ") and says in message
    assert "\n" not in message


def test_read_file_refuses_unreadable_files(tmp_path):
    with pytest.raises(DataError, match="file not found"):
        read_file(tmp_path / "absent.txt")
    bad = tmp_path / "latin1.txt"
    bad.write_bytes(b"1 Caf\xe9.\n")
    with pytest.raises(DataError, match="not UTF-8"):
        read_file(bad)


def test_config_checks_its_values():
    with pytest.raises(ConfigError, match="task: 21"):
        BabiConfig(task=21).validate("data")
    with pytest.raises(ConfigError, match="valid_fraction"):
        BabiConfig(valid_fraction=1.0).validate("data")
    assert BabiConfig(task="all").tasks == list(range(1, 21))


def test_splits_hold_out_a_tenth_of_training(babi_dir):
    cfg = BabiConfig(task=1, directory=str(babi_dir))
    splits = load_splits(cfg)
    assert (len(splits.train), len(splits.valid), len(splits.test)) == (180, 20, 200)
    wheres = {q.where for q in splits.train}
    assert not wheres & {q.where for q in splits.valid}
    assert load_splits(cfg).valid == splits.valid  # the same questions every time
    other = load_splits(BabiConfig(task=1, directory=str(babi_dir), split_seed=1))
    assert other.valid != splits.valid
    with pytest.raises(DataError, match="missing bAbI file qa2_"):
        load_splits(BabiConfig(task=2, directory=str(babi_dir)))


def test_the_release_reads_as_documented(shared_data):
    directory = shared_data("babi")
    for name, digest in CHECKSUMS.items():
        path = directory / "en" / name
        assert hashlib.sha256(path.read_bytes()).hexdigest() == digest
    for task in TASKS:
        for split in ("train", "test"):
            questions = read_file(task_file(directory, task, split), task)
            assert len(questions) == 1000, (task, split)
            assert all(q.supporting or task == 0 for q in questions[:50])
