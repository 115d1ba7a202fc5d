"""A memory-network checkpoint in Python: answer a question about a story, see each hop's
attention over the story's sentences; evaluate on bAbI::

    model = attnkit.load("runs/babi_memn2n_task1/best")
    a = model.answer("Mary moved to the bathroom. John went to the hallway.", "Where is Mary?")
    a.answer, a.attention            # "bathroom", (hops, sentences)
    a.plot("hops.png"); a.show()     # the paper's figure; the interactive map
    print(model.evaluate("test"))    # error, failed tasks, supporting-fact attention
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from attnkit.checkpoint import checkpoint_dir
from attnkit.data.babi import Question, parse_stories
from attnkit.errors import AttnkitError, InputError
from attnkit.evaluation.scores import Scores
from attnkit.families import arguments as check
from attnkit.families.memnet.bundle import load_memnet_model
from attnkit.viz.inline import ShowsRecord
from attnkit.viz.memory import hops_record, save_hops
from attnkit.viz.records import AttentionRecord

MAX_SENTENCES = 1000
MAX_WORDS = 1000  # words of one sentence or of the question (the text family's bound)
#: the splits of a bAbI task (dev is valid: the held-out 10% of training)
SPLITS = ("train", "valid", "dev", "test")
_NUMBERED = re.compile(r"^\s*\d+\s+")


@dataclass
class Answer(ShowsRecord):
    """A memory network's answer to ``question`` about ``sentences`` (its memories) and where
    each hop looked: ``attention`` (K, M), one row per hop summing to 1. ``unknown``: words of
    the story or question the model never saw (read as nothing); ``supporting``: the supporting
    facts' indices where known (a bAbI question)."""

    question: str
    answer: str
    sentences: list[str]
    attention: np.ndarray
    unknown: list[str] = field(default_factory=list)
    supporting: list[int] = field(default_factory=list)
    truth: str | None = None
    #: (M,) the gradient saliency of the answer over the sentences (:meth:`MemoryModel.explain`)
    saliency: np.ndarray | None = None

    def record(self) -> AttentionRecord:
        record = hops_record(
            self.sentences, self.question, self.answer, self.attention, self.supporting, self.truth
        )
        if self.saliency is not None:  # the same in every hop's column: a choice in the view
            record.saliency = np.repeat(self.saliency[:, None], self.attention.shape[0], 1)
        return record

    def _view_title(self) -> str | None:
        return "hop-by-hop attention over the story's sentences"

    def _repr_html_(self) -> str:
        with warnings.catch_warnings():  # the static picture's long sentence labels squeeze it
            warnings.filterwarnings("ignore", message="constrained_layout not applied")
            return super()._repr_html_()

    def to_dict(self) -> dict[str, Any]:
        return {
            "question": self.question,
            "answer": self.answer,
            "sentences": self.sentences,
            "attention": np.round(self.attention, 6).tolist(),
            "unknown": self.unknown,
            "supporting": self.supporting,
            "truth": self.truth,
            "saliency": None if self.saliency is None else np.round(self.saliency, 6).tolist(),
        }

    def plot(self, path_or_ax=None):
        """The paper's figure (sentences down, hops across, supporting facts outlined): to a
        .png/.svg/.pdf file, into an ``Axes``, or on a new figure (returned)."""
        from attnkit.viz.memory import draw_hops, record_figure

        if path_or_ax is None:
            return record_figure(self.record())
        if isinstance(path_or_ax, str | Path):
            return save_hops(self.record(), path_or_ax)
        draw_hops(path_or_ax, self.record())
        return path_or_ax.figure


class BabiScores(Scores):
    """The scores of :meth:`MemoryModel.evaluate`: ``scores["tasks"]["1"]["error_pct"]``,
    ``mean_error_pct``, ``failed_tasks``; ``.value`` is the mean error %."""

    @property
    def metric(self) -> str:
        return "mean_error_pct"

    @property
    def value(self) -> float:
        return self["mean_error_pct"]

    def table(self) -> str:
        from attnkit.evaluation.babi import summary_table

        return summary_table(self.to_dict())

    def _rows(self) -> list[tuple[str, float]]:
        return [(f"task {t} error %", s["error_pct"]) for t, s in self["tasks"].items()]


def _words_within(text: str, what: str) -> None:
    """An InputError where ``text`` has more than :data:`MAX_WORDS` words (the picture of
    a longer one takes minutes to draw)."""
    words = len(text.split())
    if words > MAX_WORDS:
        name = "question" if what == "question" else "story"
        raise InputError(f"{what}: {words:,} words, more than {MAX_WORDS:,}", name)


def story_sentences(story: str | Sequence[str]) -> list[str]:
    """A story as its sentences: a list of them, or a text of one sentence a line (bAbI's line
    numbers may be kept) or of sentences ending in ``.``, ``!`` or ``?``."""
    if isinstance(story, str):
        lines = [_NUMBERED.sub("", line).strip() for line in story.splitlines()]
        lines = [line for line in lines if line]
        if len(lines) == 1:
            lines = [s.strip() for s in re.split(r"(?<=[.!?])\s+", lines[0]) if s.strip()]
        story = lines
    sentences = [str(s).strip() for s in story if str(s).strip()]
    if not sentences:
        raise InputError("story: no sentence to read", "story")
    for i, sentence in enumerate(sentences):
        _words_within(sentence, f"story sentence {i + 1}")
    if len(sentences) > MAX_SENTENCES:
        raise InputError(f"story: {len(sentences)} sentences; at most {MAX_SENTENCES}", "story")
    return sentences


class MemoryModel:
    """A loaded memory-network checkpoint: ``config`` (the run's resolved config), ``vocab``
    (its words and shapes), ``net`` (the torch module, in eval mode)."""

    family = "memnet"

    def __init__(self, config, vocab, net, path: Path | None = None):
        self.config, self.vocab, self.net, self.path = config, vocab, net, path

    @classmethod
    def load(cls, directory: str | Path, device: str = "auto") -> MemoryModel:
        cfg, vocab, net = load_memnet_model(directory, "cpu" if device == "auto" else device)
        return cls(cfg, vocab, net, Path(directory))

    def __repr__(self) -> str:
        c = self.config
        return (
            f"MemoryModel({c.model.hops} hops, {c.model.memory}, task={c.data.task}, {self.path})"
        )

    def read(self, story: str | Sequence[str], question: str | None = None) -> Question:
        """``story`` and ``question`` as the model reads them, parsed once: a
        :class:`~attnkit.data.babi.Question` that :meth:`answer` and :meth:`explain` take as it
        is (the server reads each request with it, then answers what it read).

        The story is its sentences (:func:`story_sentences`), or, where its lines include a bAbI
        question line (``N question<TAB>answer<TAB>supporting ids``), bAbI's lines: without a
        ``question`` its last question is asked, with its answer and supporting facts. Bad
        input is an :class:`~attnkit.errors.InputError` naming ``story`` or ``question``."""
        if question is not None and not isinstance(question, str):
            raise InputError("question: give the question as text", "question")
        asked = question.strip() if question is not None and question.strip() else None
        _words_within(asked or "", "question")
        lines = [line for item in check.texts(story, "story") for line in item.splitlines()]
        if any("\t" in line for line in lines):
            try:
                last = parse_stories("\n".join(lines), "story", 0, self.vocab.memory_size)[-1]
            except AttnkitError as exc:  # bAbI's reader names the story's line at fault
                raise InputError(str(exc), "story") from None
            for i, sentence in enumerate(last.memories):
                _words_within(sentence, f"story sentence {i + 1}")
            _words_within(last.question, "question")
            return last if asked is None else Question(last.memories, asked, "", ())
        if asked is None:
            raise InputError(
                "question: ask one (or end a bAbI story with a question line: "
                "'N question<TAB>answer<TAB>supporting ids')",
                "question",
            )
        return Question(tuple(story_sentences(story)), asked, "", ())

    def answer(self, story: str | Sequence[str] | Question, question: str | None = None) -> Answer:
        """Answer ``question`` about ``story`` (read by :meth:`read`, or what it read); the model
        sees the last ``data.memory_size`` sentences. ``unknown``: the words it never saw."""
        asked = story if isinstance(story, Question) else self.read(story, question)
        memories = asked.memories[-self.vocab.memory_size :]
        kept = len(asked.memories) - len(memories)  # the supporting facts' indices follow
        unknown = []
        for text in (*memories, asked.question):
            unknown += self.vocab.word_ids(text, 10_000)[1]
        supporting = tuple(i - kept for i in asked.supporting if i >= kept)
        q = Question(memories, asked.question, asked.answer, supporting)
        return self._answers([q], sorted(set(unknown)))[0]

    def explain(
        self,
        story: str | Sequence[str] | Question,
        question: str | None = None,
        method: str = "gradient",
    ) -> Answer:
        """:meth:`answer`, with the gradient saliency of the answer over the sentences
        (``method``: gradient, input_x_gradient or integrated_gradients; captum computes it)
        beside the hops' attention (``.saliency``, summing to 1)."""
        from attnkit.explain.memory import METHODS, memory_saliency

        method = check.text(method, "method").replace("-", "_")
        if method not in METHODS:
            raise InputError(f"method: {method!r} is not one of {', '.join(METHODS)}", "method")
        result = self.answer(story, question)
        batch = self.vocab.encode([Question(tuple(result.sentences), result.question, "", ())])
        saliency, _ = memory_saliency(self.net, batch.stories, batch.counts, batch.queries, method)
        result.saliency = saliency[0, : len(result.sentences)].numpy()
        return result

    def explain_split(
        self,
        split: str = "test",
        count: int = 10,
        method: str = "gradient",
        out=None,
        data_dir: str | Path | None = None,
    ) -> dict:
        """``attnkit explain``: the first ``count`` questions of ``split`` (read from
        ``data_dir``, default ``$ATTNKIT_DATA_DIR/babi``), attention beside saliency; scores.json
        and report.html in ``out`` (default ``RUN/explain/CHECKPOINT``)."""
        from attnkit.explain.memory import explain_to_dir

        check.choice(split, "split", SPLITS)
        directory = checkpoint_dir(self.path)
        out = Path(out) if out is not None else directory.parent / "explain" / directory.name
        questions = self._split(split, data_dir)[: max(count, 1)]
        loaded = (self.config, self.vocab, self.net)
        return explain_to_dir(loaded, questions, method.replace("-", "_"), out)

    def answer_questions(self, questions: Sequence[Question]) -> list[Answer]:
        """The answers to bAbI questions (:func:`attnkit.data.babi.parse_stories`), with their
        supporting facts and true answers."""
        return self._answers(list(questions), [])

    def _answers(self, questions: list[Question], unknown: list[str]) -> list[Answer]:
        batch = self.vocab.encode(questions).to(next(self.net.parameters()).device)
        with torch.no_grad():
            out = self.net(batch.stories, batch.counts, batch.queries)
        results = []
        for i, q in enumerate(questions):
            n = int(batch.counts[i])
            memories = list(q.memories[-self.vocab.memory_size :])
            results.append(
                Answer(
                    q.question,
                    self.vocab.tokens[int(out.logits[i].argmax())],
                    memories,
                    out.attention[i, :, :n].cpu().numpy(),
                    unknown,
                    list(q.supporting),
                    q.answer or None,
                )
            )
        return results

    def _split(self, split: str, data_dir: str | Path | None) -> list[Question]:
        """The questions of ``split`` of the checkpoint's task(s), read from ``data_dir`` or
        ``$ATTNKIT_DATA_DIR/babi``: never from the checkpoint's own ``data.directory``."""
        from attnkit.data.babi import load_splits
        from attnkit.data.location import checkpoint_data

        if data_dir is not None:
            check.path(data_dir, "data_dir")
        return load_splits(checkpoint_data(self.config.data, data_dir)).split(split)

    def evaluate(
        self,
        split: str = "test",
        out: str | Path | None = None,
        stories: str | Path | None = None,
        data_dir: str | Path | None = None,
    ) -> BabiScores:
        """Score the checkpoint on ``split`` ("test" or "dev": the held-out 10%) of its task(s),
        read from ``data_dir`` (holding ``en/qaN_*``; default ``$ATTNKIT_DATA_DIR/babi``: the
        checkpoint's own ``data.directory`` is not followed), or on the questions of
        ``stories``, a bAbI-format file of yours (task 0); writes scores.json, predictions.tsv
        and report.html to ``out`` (default ``RUN/eval/CHECKPOINT-SPLIT`` or
        ``RUN/eval/CHECKPOINT-FILENAME``)."""
        from attnkit.data.babi import read_file
        from attnkit.evaluation.babi import evaluate_to_dir

        if stories is None:
            check.choice(split, "split", SPLITS)
        else:
            check.path(stories, "stories")
        if self.path is None:
            raise InputError("this model was not loaded from a checkpoint directory", "evaluate")
        loaded = (self.config, self.vocab, self.net)
        out = None if out is None else Path(out)
        if stories is not None:
            questions = read_file(stories, 0, self.vocab.memory_size)
            split = Path(stories).stem
        else:
            questions = self._split(split, data_dir)
        directory = checkpoint_dir(self.path)
        return BabiScores(evaluate_to_dir(directory, split, out, loaded, self.family, questions))
