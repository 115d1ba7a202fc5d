"""The ``data:`` section of an experiment: one dataclass per task.

:class:`TaskData` holds the keys every task reads (how text becomes tokens and
how long it may be); each task's class adds the keys of that task alone. The
registry (:mod:`attnkit.data.tasks.registry`) maps ``data.task`` to its class,
and :func:`attnkit.data.tasks.registry.data_from_dict` rejects a key of another
task naming the keys the chosen task has.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from attnkit.config import at_least, check_values, join_key
from attnkit.data.tasks import listops, multi30k, numbers, phrases
from attnkit.errors import ConfigError

LEVELS = ("char", "word", "whitespace", "sentencepiece")
"""How ``src_level`` / ``tgt_level`` cut text into tokens."""
NORMALIZE = ("NFC", "NFD", "NFKC", "NFKD", "none")
"""The Unicode normal form text is brought to before it is cut (``none``: as it comes)."""
OVERLONG = ("truncate", "skip", "error")
"""What happens to a pair longer than ``max_src_len`` / ``max_tgt_len``."""
PARALLEL_METRICS = ("exact", "bleu", "chrf", "wer", "cer")
"""What ``data.metric`` of the ``parallel`` task may name (:mod:`attnkit.data.tasks.registry`)."""


@dataclass
class TaskData:
    """The keys of every task: tokenization and length limits."""

    task: str = ""
    src_level: str = "char"
    tgt_level: str = "char"
    lowercase: bool = False
    normalize: str = "NFC"  # Unicode normal form before tokenizing; "none" keeps text as it is
    vocab_size: int = 8000  # sentencepiece only
    max_src_len: int = 100  # tokens; longer inputs follow `overlong`
    max_tgt_len: int = 100
    overlong: str = "truncate"

    CHOICES = {
        "src_level": LEVELS,
        "tgt_level": LEVELS,
        "overlong": OVERLONG,
        "normalize": NORMALIZE,
    }
    # keys added to a task after checkpoints were written without them, and the value such a
    # checkpoint's saved config means (registry.data_from_dict fills it in)
    ADDED_KEYS: ClassVar[dict] = {"normalize": "none"}
    #: vocab_size sizes a sentencepiece model: read at that level only (attnkit.config.applicable)
    READ_ONLY_WITH: ClassVar[dict] = {"vocab_size": ("subword", (True,))}
    PATH_KEYS: ClassVar[tuple[str, ...]] = ()  # keys naming files or directories (data.tasks.paths)

    @property
    def subword(self) -> bool:
        """True when a side is read in sentencepiece pieces (``vocab_size`` sizes them)."""
        return "sentencepiece" in (self.src_level, self.tgt_level)

    def validate(self, where: str) -> None:
        check_values(self, where, {name: at_least(1) for name in ("max_tgt_len", "vocab_size")})
        if self.max_src_len < 2:
            raise ConfigError(
                f"{join_key(where, 'max_src_len')}: must be at least 2 (one token and </s>)"
            )


@dataclass
class GeneratedData(TaskData):
    """A task whose pairs are generated, not read from files."""

    seed: int = 0  # generated tasks and splits are a function of this seed


@dataclass
class NumbersData(GeneratedData):
    """``numbers``: spelled-out numbers <-> digits (:mod:`attnkit.data.tasks.numbers`)."""

    task: str = "numbers"
    languages: list[str] = field(default_factory=lambda: list(numbers.LANGUAGES))
    direction: str = "words2digits"
    max_number: int = 999
    # numbers per item: 1, every number once per language (10% dev, 10% test); more, lists of
    # that many numbers one after another ("sieben, zwölf" -> "7 12"), about 24 characters each
    count: int = 1
    train_size: int = 20000  # count > 1: distinct generated training lists
    dev_size: int = 1000  # count > 1: distinct dev lists
    test_size: int = 1000  # count > 1: distinct test lists

    CHOICES = {**TaskData.CHOICES, "direction": numbers.DIRECTIONS}
    ADDED_KEYS: ClassVar[dict] = {**TaskData.ADDED_KEYS, "count": 1}  # saved before: one number

    def validate(self, where: str) -> None:
        super().validate(where)
        sizes = ("train_size", "dev_size", "test_size")
        check_values(self, where, {name: at_least(1) for name in ("max_number", "count", *sizes)})
        if self.count == 1:  # every number once: the sizes are 10% each, not these keys
            for name in sizes:
                if getattr(self, name) != getattr(NumbersData, name):
                    raise ConfigError(
                        f"{join_key(where, name)}: read only with data.count > 1 (count 1 "
                        "holds out 10% of the numbers for dev and 10% for test)"
                    )
        key = join_key(where, "languages")
        if not self.languages:
            raise ConfigError(f"{key}: empty; choose from {', '.join(numbers.LANGUAGES)}")
        for i, lang in enumerate(self.languages):
            if lang not in numbers.LANGUAGES:
                raise ConfigError(
                    f"{key}[{i}]: {lang!r} is not one of {', '.join(numbers.LANGUAGES)}"
                )


@dataclass
class DatesData(GeneratedData):
    """``dates``: dates as people write them -> ISO 8601 (:mod:`attnkit.data.tasks.dates`)."""

    task: str = "dates"
    train_size: int = 20000
    dev_size: int = 1000
    test_size: int = 1000

    def validate(self, where: str) -> None:
        super().validate(where)
        sizes = ("train_size", "dev_size", "test_size")
        check_values(self, where, {name: at_least(1) for name in sizes})


@dataclass
class CopyRareData(GeneratedData):
    """``copyrare``: requests whose names and numbers, mostly never seen in training, the target
    repeats (:mod:`attnkit.data.tasks.copyrare`); the task of the copy switch, ``model.copy``."""

    task: str = "copyrare"
    train_size: int = 6000  # distinct generated training requests
    dev_size: int = 300  # distinct dev requests
    test_size: int = 500  # distinct test requests (almost all their names and numbers unseen)
    src_level: str = "whitespace"  # names and numbers are single words
    tgt_level: str = "whitespace"

    def validate(self, where: str) -> None:
        super().validate(where)
        sizes = ("train_size", "dev_size", "test_size")
        check_values(self, where, {name: at_least(1) for name in sizes})


@dataclass
class ListOpsData(GeneratedData):
    """``listops``: nested MAX / MIN / MED / SM expressions over digits -> their value, one digit
    (:mod:`attnkit.data.tasks.listops`); Long Range Arena's long-range task. The defaults are
    LRA's (depth 10, 10 arguments, 500 to 2,000 tokens)."""

    task: str = "listops"
    train_size: int = 10000  # distinct generated training expressions
    dev_size: int = 500  # distinct dev expressions
    test_size: int = 1000  # distinct test expressions
    max_depth: int = 10  # operators nest at most this deep
    max_args: int = 10  # arguments per operator, 2 to this
    min_length: int = 500  # tokens per expression at least, brackets included
    max_length: int = 2000  # tokens per expression at most; data.max_src_len holds it and </s>
    src_level: str = "whitespace"  # tokens: [MAX [MIN [MED [SM ] and the digits
    tgt_level: str = "whitespace"  # the answer, one digit
    max_src_len: int = 2001  # max_length and </s>: never truncated

    def validate(self, where: str) -> None:
        super().validate(where)
        sizes = ("train_size", "dev_size", "test_size")
        check_values(self, where, {name: at_least(1) for name in sizes})
        try:
            listops.check_settings(self.max_depth, self.max_args, self.min_length, self.max_length)
        except ValueError as exc:
            raise ConfigError(f"{where}: {exc}") from None
        if self.max_src_len < self.max_length + 1:
            raise ConfigError(
                f"{join_key(where, 'max_src_len')}: {self.max_src_len} would cut expressions of "
                f"up to {self.max_length} tokens (data.max_length) and </s>; raise it to at "
                f"least {self.max_length + 1}"
            )


@dataclass
class PhrasesData(GeneratedData):
    """``phrases``: phrase translation where adjectives move, English <-> Spanish or French,
    word level (:mod:`attnkit.data.tasks.phrases`)."""

    task: str = "phrases"
    src_lang: str = "fr"  # source language
    tgt_lang: str = "en"  # target language
    train_size: int = 8000  # distinct generated training phrases
    dev_size: int = 500  # distinct dev phrases
    test_size: int = 500  # distinct test phrases, the two showcase phrases among them
    max_adjectives: int = 2  # adjectives per noun phrase at most, each of another class
    sentence_share: float = 0.3  # share of "noun-phrase verb noun-phrase" sentences
    src_level: str = "word"  # word: the gold links are between words
    tgt_level: str = "word"  # word: the gold links are between words

    CHOICES = {**TaskData.CHOICES, "src_lang": phrases.LANGUAGES, "tgt_lang": phrases.LANGUAGES}

    def validate(self, where: str) -> None:
        super().validate(where)
        rules = {name: at_least(1) for name in ("train_size", "dev_size")}
        rules["test_size"] = at_least(2)
        top = phrases.MAX_ADJECTIVES
        rules["max_adjectives"] = (lambda v: 0 <= v <= top, f"an integer from 0 to {top}")
        rules["sentence_share"] = (lambda v: 0.0 <= v <= 1.0, "a number from 0 to 1")
        check_values(self, where, rules)
        problem = phrases.language_problem(self.src_lang, self.tgt_lang)
        if problem:
            raise ConfigError(f"{join_key(where, 'tgt_lang')}: {problem}")


@dataclass
class ParallelData(TaskData):
    """``parallel``: the user's own files, a ``.tsv`` or ``[source_file, target_file]`` per
    split (:mod:`attnkit.data.tasks.parallel`)."""

    task: str = "parallel"
    train: str | list[str] | None = None
    dev: str | list[str] | None = None
    test: str | list[str] | None = None
    # exact | bleu | chrf | wer | cer: scores evaluation, picks best, stops early, ranks averaging;
    # null: exact for char-level targets, bleu for word and sentencepiece ones
    metric: str | None = None

    CHOICES = {**TaskData.CHOICES, "metric": PARALLEL_METRICS}
    # what every parallel run was scored by before the key
    ADDED_KEYS = {**TaskData.ADDED_KEYS, "metric": "exact"}
    PATH_KEYS = ("train", "dev", "test")

    def validate(self, where: str) -> None:
        super().validate(where)
        if not (self.train and self.dev and self.test):
            raise ConfigError(f"{where}: task 'parallel' needs data.train, data.dev and data.test")
        if self.metric is None:  # resolved here: a checkpoint's config names the metric it used
            self.metric = default_parallel_metric(self.tgt_level)


def default_parallel_metric(tgt_level: str) -> str:
    """``exact`` for character targets (transliteration, spelling: one right answer), ``bleu``
    for word and sentencepiece ones (sentences, where exact match is almost always 0)."""
    return "exact" if tgt_level == "char" else "bleu"


@dataclass
class DownloadedData(TaskData):
    """A public data set read from fixed files in ``directory`` (fetched with ``download``).

    ``directory`` null: ``$ATTNKIT_DATA_DIR/<name>``, else the user cache
    (:mod:`attnkit.data.location`). With ``download`` (the shipped configs set it) missing files
    are fetched and checked against their sha256; without, a missing file is an error saying so.
    """

    directory: str | None = None
    download: bool = False  # the default of the single data section of before (FLAT_DEFAULTS)

    PATH_KEYS = ("directory",)


@dataclass
class G2PData(DownloadedData):
    """``g2p``: CMUdict words -> phones (:mod:`attnkit.data.tasks.g2p`)."""

    task: str = "g2p"


@dataclass
class Multi30kData(DownloadedData):
    """``multi30k``: image captions, English <-> German or English <-> French
    (:mod:`attnkit.data.tasks.multi30k`); German <-> French is refused (not line-aligned)."""

    task: str = "multi30k"
    src_lang: str = "de"
    tgt_lang: str = "en"

    CHOICES = {**TaskData.CHOICES, "src_lang": multi30k.LANGUAGES, "tgt_lang": multi30k.LANGUAGES}

    def validate(self, where: str) -> None:
        super().validate(where)
        problem = multi30k.language_problem(self.src_lang, self.tgt_lang)
        if problem:  # src_lang and tgt_lang are valid choices here: the pair is what is wrong
            raise ConfigError(f"{join_key(where, 'tgt_lang')}: {problem}")


FLAT_DEFAULTS = {
    "task": "numbers",
    "seed": 0,
    "languages": ["en", "de", "fr", "es"],
    "direction": "words2digits",
    "max_number": 999,
    "train_size": 20000,
    "dev_size": 1000,
    "test_size": 1000,
    "train": None,
    "dev": None,
    "test": None,
    "directory": None,
    "download": False,
    "src_lang": "de",
    "tgt_lang": "en",
    "src_level": "char",
    "tgt_level": "char",
    "lowercase": False,
    "vocab_size": 8000,
    "max_src_len": 100,
    "max_tgt_len": 100,
    "overlong": "truncate",
}
"""Every key of the single ``data:`` section used before it was split by task, with its default.

A checkpoint's ``config.yaml`` written then lists all of them, whatever its task; these
defaults are frozen here so that such files keep loading (see ``data_from_dict``).
"""
