"""ListOps (attnkit.data.tasks.listops): generated expressions, their answers checked by an
evaluator written here apart (Python's own eval of the expression rewritten as calls), the
bounds of the generator and of the reader, and the task as a config names it."""

from __future__ import annotations

import math
import random
import re

import pytest

from attnkit.data.tasks import listops
from attnkit.data.tasks.registry import build_splits, data_from_dict
from attnkit.errors import ConfigError, DataError


def _med(*xs):  # the lower middle for an even count, as int(np.median(...)) on digits
    s = sorted(xs)
    n = len(s)
    return s[n // 2] if n % 2 else math.floor((s[n // 2 - 1] + s[n // 2]) / 2)


def _sm(*xs):
    return sum(xs) % 10


def reference_value(source: str) -> int:
    """The expression as Python: '[MAX 2 [SM 4 7 ] ]' -> 'max(2, _sm(4, 7, ), )' -> eval."""
    names = {"[MAX": "max(", "[MIN": "min(", "[MED": "_med(", "[SM": "_sm("}
    python = " ".join(names.get(t, ")," if t == "]" else f"{t},") for t in source.split())
    python = python.rstrip(",")
    return eval(python, {"max": max, "min": min, "_med": _med, "_sm": _sm})


def test_answers_agree_with_an_independent_evaluator():
    splits = listops.generate(
        seed=4,
        n_train=300,
        n_dev=20,
        n_test=40,
        max_depth=5,
        max_args=6,
        min_length=8,
        max_length=120,
    )
    for source, target in splits.train + splits.dev + splits.test:
        assert target == str(reference_value(source)), source
        assert re.fullmatch(r"\d", target)


def test_hand_worked_examples():
    assert listops.evaluate("[MAX 2 9 [MIN 4 7 ] 0 ]") == 9
    assert listops.evaluate("[SM [MED 3 8 5 ] 6 [MAX 1 [MIN 0 4 ] ] ]") == 2  # 5 + 6 + 1
    assert listops.evaluate("[MED 1 2 7 9 ]") == 4  # (2 + 7) / 2 rounded down
    assert listops.evaluate("( ( [MIN 5 ) 3 ) ]") == 3  # LRA's parentheses are skipped


def test_lengths_depth_and_arguments_stay_in_bounds():
    rng = random.Random(1)
    for source in listops.make_expressions(rng, 200, 3, 4, 10, 60):
        tokens = source.split()
        assert 10 <= len(tokens) <= 60
        depth = deepest = 0
        for token in tokens:
            depth += token in listops.OPERATORS
            depth -= token == "]"
            deepest = max(deepest, depth)
        assert deepest <= 3 and depth == 0
    # arguments per operator: 2 .. max_args, counted with a stack
    for source in listops.make_expressions(random.Random(2), 100, 4, 3, 4, 80):
        counts = []
        for token in source.split():
            if token in listops.OPERATORS:
                counts.append(0)
            elif token == "]":
                assert 2 <= counts.pop() <= 3, source
                if counts:
                    counts[-1] += 1
            else:
                counts[-1] += 1


def test_the_splits_follow_the_seed_and_are_disjoint():
    kw = dict(
        n_train=200, n_dev=20, n_test=30, max_depth=4, max_args=5, min_length=8, max_length=80
    )
    a, b = listops.generate(seed=7, **kw), listops.generate(seed=7, **kw)
    assert a == b and a != listops.generate(seed=8, **kw)
    assert a.sizes() == {"train": 200, "dev": 20, "test": 30}
    train, dev, test = ({s for s, _ in split} for split in (a.train, a.dev, a.test))
    assert not (train & dev or train & test or dev & test)


def test_impossible_settings_are_refused_in_bounded_time():
    # depth 1 with 2 arguments gives 4 tokens exactly: 100 to 200 never comes
    with pytest.raises(ValueError, match="widen the lengths"):
        listops.make_expressions(random.Random(0), 5, 1, 2, 100, 200)
    for args in [(0, 5, 10, 20), (3, 1, 10, 20), (3, 5, 30, 20), (3, 5, 2, 20)]:
        with pytest.raises(ValueError, match="listops:"):
            listops.check_settings(*args)


@pytest.mark.parametrize(
    "source, message",
    [
        ("[MAX 1 2 ] 3", "after the end"),
        ("] 1", "closes no operator"),
        ("[MIN 4 ]", "1 argument"),
        ("[SM 1 2", "left open"),
        ("", "no operator"),
        ("7", "outside any operator"),
        ("[MAX 1 x ]", "'x' is not an operator"),
    ],
)
def test_a_malformed_expression_is_one_line(source, message):
    with pytest.raises(ValueError, match=message) as err:
        listops.evaluate(source)
    assert "\n" not in str(err.value)


def test_too_many_tokens_are_refused_before_reading():
    with pytest.raises(ValueError, match="more than the limit of 10"):
        listops.evaluate("[MAX " + "1 " * 20 + "]", max_tokens=10)


def test_the_reader_takes_lra_files_and_names_the_bad_line(tmp_path):
    good = tmp_path / "basic_test.tsv"
    good.write_text("Source\tTarget\n( ( [MAX 2 ) 9 ) ]\t9\n[SM 5 6 ]\t1\n", encoding="utf-8")
    assert listops.read_tsv(good) == [("[MAX 2 9 ]", "9"), ("[SM 5 6 ]", "1")]
    bad = tmp_path / "bad.tsv"
    bad.write_text("[SM 5 6 ]\t1\n[MAX 2 9 ]\t3\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"bad.tsv:2: target '3', but the source evaluates to 9"):
        listops.read_tsv(bad)
    bad.write_text("[SM 5 6 ]\n", encoding="utf-8")
    with pytest.raises(DataError, match="bad.tsv:1: expected 'source<TAB>target'"):
        listops.read_tsv(bad)
    with pytest.raises(DataError, match="is a directory"):
        listops.read_tsv(tmp_path)


def test_the_task_from_a_config():
    cfg = data_from_dict(
        {
            "task": "listops",
            "train_size": 50,
            "dev_size": 5,
            "test_size": 5,
            "max_depth": 3,
            "max_args": 4,
            "min_length": 8,
            "max_length": 40,
            "max_src_len": 41,
        }
    )
    cfg.validate("data")
    splits = build_splits(cfg)
    assert splits.sizes() == {"train": 50, "dev": 5, "test": 5}
    assert all(len(s.split()) <= 40 for s, _ in splits.train)
    cfg.max_src_len = 30
    with pytest.raises(ConfigError, match="data.max_src_len: 30 would cut expressions"):
        cfg.validate("config: data")
    cfg.max_src_len, cfg.max_args = 41, 1
    with pytest.raises(ConfigError, match="max_args must be at least 2"):
        cfg.validate("config: data")
