"""bAbI question answering (Weston et al. 2015), v1.2, English, 1k training questions a task.

A task file holds stories: numbered lines, the numbers restarting at 1 with each story. A fact
line is ``N sentence``; a question line is ``N question<TAB>answer<TAB>supporting ids``, the ids
naming the fact lines of the same story the answer rests on::

    1 Mary moved to the bathroom.
    2 John went to the hallway.
    3 Where is Mary?	bathroom	1

Every question becomes one :class:`Question`: the facts told before it in its story (its
memories, the last ``memory_size`` of them), the question, the answer (one word, or a
comma-joined list such as ``n,s`` for path finding, read as one answer) and the indices of the
supporting facts among those memories. Your own stories in the same format read the same way
(:func:`parse_stories`). A line that is neither a fact nor a question, a question before any
fact, a number out of order or a supporting id that names no fact of the story is a
:class:`~attnkit.errors.DataError` naming ``file:line``.

:class:`BabiConfig` is the ``data:`` section of a memory-network experiment: the task (1..20,
or ``all`` for the 20 trained jointly), where the files are, the memory size and the share of
the training questions held out for validation (10%, as Sukhbaatar et al. 2015 do).
"""

from __future__ import annotations

import os
import random
import re
from dataclasses import dataclass
from pathlib import Path

from attnkit.data.bounded import ascii_int, read_regular_bytes
from attnkit.errors import ConfigError, DataError

#: the task files' names (``qaN_NAME_{train,test}.txt``), task number -> NAME
TASKS = {
    1: "single-supporting-fact",
    2: "two-supporting-facts",
    3: "three-supporting-facts",
    4: "two-arg-relations",
    5: "three-arg-relations",
    6: "yes-no-questions",
    7: "counting",
    8: "lists-sets",
    9: "simple-negation",
    10: "indefinite-knowledge",
    11: "basic-coreference",
    12: "conjunction",
    13: "compound-coreference",
    14: "time-reasoning",
    15: "basic-deduction",
    16: "basic-induction",
    17: "positional-reasoning",
    18: "size-reasoning",
    19: "path-finding",
    20: "agents-motivations",
}
#: sha256 of three files of the release, to check a copy against (../shared/data/README.md)
CHECKSUMS = {
    "qa1_single-supporting-fact_train.txt": (
        "c64ba9b1a49bbb111ffc4cd2ae4f129d25c012399dd7ade9679eea464b9afb05"
    ),
    "qa1_single-supporting-fact_test.txt": (
        "55acf66cef2f6d798e2aa1d056e1ec8f24e910ea9215b639450574321132959b"
    ),
    "qa20_agents-motivations_test.txt": (
        "bd3bde3788ac14ba0ae095078f7b820fbd2bfa6a34dba9d1d46a34afde9c2729"
    ),
}
MAX_FILE_BYTES = 64 << 20  # a task file is about 0.2-2 MB
MAX_LINE_CHARS = 10_000
#: lines of one story (its ids count 1, 2, 3, ...); the longest of the bAbI tasks has 229
MAX_STORY_LINES = 1_000
#: memories all the questions of one text hold together (bAbI's largest file: about 500,000)
MAX_MEMORY_SLOTS = 20_000_000
_WORD = re.compile(r"[a-z0-9,'-]+")


def words(text: str) -> list[str]:
    """The lower-cased words of a sentence or question, without its full stop or question
    mark: ``"Where is Mary?"`` -> ``["where", "is", "mary"]``."""
    return _WORD.findall(text.lower())


@dataclass(frozen=True)
class Question:
    """One question with the story told before it.

    ``memories``: the facts before the question (at most ``memory_size``, the latest), as text;
    ``supporting``: indices into ``memories`` of the facts the answer rests on; ``task``: its
    task number (0 for a story of your own); ``where``: ``file:line`` of the question."""

    memories: tuple[str, ...]
    question: str
    answer: str
    supporting: tuple[int, ...]
    task: int = 0
    where: str = ""


def parse_stories(
    text: str, source: str = "story", task: int = 0, memory_size: int | None = None
) -> list[Question]:
    """Every question of ``text`` (bAbI lines) with its memories; DataError naming
    ``source:line`` for a malformed line."""
    questions: list[Question] = []
    facts: list[tuple[int, str]] = []  # (line id, sentence) of the story so far
    told: set[int] = set()  # their line ids: grown with the story, not rebuilt per question
    previous, slots = 0, 0
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip("\r\n")
        if not line.strip():
            continue
        if len(line) > MAX_LINE_CHARS:
            raise DataError(
                f"a line of {len(line)} characters (at most {MAX_LINE_CHARS})", source, number
            )
        head, _, rest = line.partition(" ")
        line_id = ascii_int(head, 9)
        if line_id is None or not rest.strip():
            raise DataError(
                f"neither a fact ('N sentence') nor a question ('N question<TAB>answer<TAB>"
                f"supporting ids'): {line[:60]!r}",
                source,
                number,
            )
        if line_id == 1:
            facts, told = [], set()
        elif line_id != previous + 1:
            raise DataError(
                f"line id {line_id} after {previous}: a story counts 1, 2, 3, ...", source, number
            )
        elif line_id > MAX_STORY_LINES:
            raise DataError(
                f"a story of over {MAX_STORY_LINES:,} lines (bAbI's longest has 229)",
                source,
                number,
            )
        previous = line_id
        if "\t" not in rest:
            facts.append((line_id, rest.strip()))
            told.add(line_id)
            continue
        question = _question(rest, facts, told, (source, number, task, memory_size))
        slots += len(question.memories)
        if slots > MAX_MEMORY_SLOTS:
            raise DataError(
                f"the questions so far hold over {MAX_MEMORY_SLOTS:,} memories: too large a text "
                "(split it, or give a smaller memory_size)",
                source,
                number,
            )
        questions.append(question)
    return questions


def _question(rest: str, facts: list, told: set[int], at: tuple) -> Question:
    """The :class:`Question` of a question line's text after its id; ``told``: the line ids of
    ``facts``; ``at``: (source, line number, task, memory size)."""
    source, number, task, memory_size = at
    fields = [f.strip() for f in rest.split("\t")]
    if len(fields) != 3 or not fields[0] or not fields[1]:
        raise DataError(
            "a question line is 'N question<TAB>answer<TAB>supporting ids' "
            f"({len(fields)} tab-separated fields here)",
            source,
            number,
        )
    question, answer, ids = fields
    if not facts:
        raise DataError("a question before any fact of its story", source, number)
    kept = facts[-memory_size:] if memory_size else facts
    index = {line_id: i for i, (line_id, _) in enumerate(kept)}
    supporting = []
    for token in ids.split():
        fact = ascii_int(token, 9)
        if fact is None or fact not in told:
            raise DataError(
                f"supporting id {token[:20]!r} names no fact of this story before the question",
                source,
                number,
            )
        if fact in index:  # a fact older than the memory holds is not pointed at
            supporting.append(index[fact])
    return Question(
        tuple(s for _, s in kept),
        question,
        answer.lower(),
        tuple(supporting),
        task,
        f"{source}:{number}",
    )


def read_file(path: str | Path, task: int = 0, memory_size: int | None = None) -> list[Question]:
    """The questions of one bAbI file: a regular file of at most :data:`MAX_FILE_BYTES` bytes
    (:func:`attnkit.data.bounded.read_regular_bytes`), UTF-8."""
    return parse_stories(read_story_file(path), str(path), task, memory_size)


def read_story_file(path: str | Path) -> str:
    """The UTF-8 text of a story file (a regular file of at most :data:`MAX_FILE_BYTES`)."""
    data = read_regular_bytes(path, MAX_FILE_BYTES)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise DataError(f"not UTF-8 text (byte {exc.start + 1})", path) from None


@dataclass
class BabiConfig:
    """``data:`` of a memory-network experiment."""

    task: int | str = 1  # 1..20, or "all": the 20 tasks trained jointly
    directory: str | None = None  # holding en/qaN_*; null: $ATTNKIT_DATA_DIR/babi
    memory_size: int = 50  # the latest facts a question sees (the paper's 50)
    valid_fraction: float = 0.1  # training questions held out for validation (the paper's 10%)
    split_seed: int = 0  # which questions are held out
    train_questions: int | None = None  # per task, before the split (null: all 1,000)

    def validate(self, where: str) -> None:
        if self.task != "all" and self.task not in TASKS:
            raise ConfigError(f"{where}.task: {self.task!r} is not 1..20 or 'all'")
        if self.memory_size < 1:
            raise ConfigError(f"{where}.memory_size: {self.memory_size} must be at least 1")
        if not 0 < self.valid_fraction < 1:
            raise ConfigError(f"{where}.valid_fraction: {self.valid_fraction} is not in (0, 1)")
        if self.train_questions is not None and self.train_questions < 2:
            raise ConfigError(f"{where}.train_questions: at least 2, or null for all")

    @property
    def tasks(self) -> list[int]:
        """The task numbers trained on."""
        return list(TASKS) if self.task == "all" else [int(self.task)]


def data_directory(cfg: BabiConfig) -> Path:
    """The directory holding ``en/`` (or the task files themselves)."""
    if cfg.directory:
        return Path(cfg.directory).expanduser()
    root = os.environ.get("ATTNKIT_DATA_DIR", "").strip()
    if not root:
        raise DataError(
            "no bAbI directory: set data.directory (a loaded checkpoint: give data_dir, "
            "--data-dir DIR holding en/qaN_*; its own data.directory is not followed) or "
            "ATTNKIT_DATA_DIR (holding babi/en/), from the release tasks_1-20_v1-2.tar.gz"
        )
    return Path(root).expanduser() / "babi"


def task_file(directory: Path, task: int, split: str) -> Path:
    """``qaN_NAME_split.txt`` under ``directory/en`` (or ``directory``)."""
    name = f"qa{task}_{TASKS[task]}_{split}.txt"
    for folder in (directory / "en", directory):
        if (folder / name).is_file():
            return folder / name
    raise DataError(f"missing bAbI file {name} (looked in {directory / 'en'} and {directory})")


@dataclass
class BabiSplits:
    """The questions of ``train``, ``valid`` and ``test``, each in file order per task."""

    train: list[Question]
    valid: list[Question]
    test: list[Question]

    def split(self, name: str) -> list[Question]:
        """``train``, ``valid`` (also called ``dev``) or ``test``."""
        return {"train": self.train, "valid": self.valid, "dev": self.valid, "test": self.test}[
            name
        ]


def load_splits(cfg: BabiConfig, directory: Path | None = None) -> BabiSplits:
    """The questions of the config's task(s), read from ``directory`` (default: the config's,
    :func:`data_directory`); ``valid_fraction`` of each task's training questions (chosen with
    ``split_seed``) held out."""
    directory = data_directory(cfg) if directory is None else directory
    train, valid, test = [], [], []
    for task in cfg.tasks:
        questions = read_file(task_file(directory, task, "train"), task, cfg.memory_size)
        if cfg.train_questions is not None:
            questions = questions[: cfg.train_questions]
        order = list(range(len(questions)))
        random.Random(cfg.split_seed * 1000 + task).shuffle(order)
        held = set(order[: max(1, round(cfg.valid_fraction * len(questions)))])
        train += [q for i, q in enumerate(questions) if i not in held]
        valid += [q for i, q in enumerate(questions) if i in held]
        test += read_file(task_file(directory, task, "test"), task, cfg.memory_size)
    return BabiSplits(train, valid, test)
