"""A text-classification checkpoint in Python: classify sentences and see the weight of each
word; explain an answer with gradient saliency; evaluate.

Used by ``attnkit plot``/``explain``/``evaluate`` of text checkpoints, by the explorer and by
notebooks::

    model = attnkit.load("runs/sst2_bilstm_attention")
    c = model.classify("a gripping film")
    c.label, c.probs, c.word_weights
    c.show()                                  # the sentence, its words shaded by attention
    model.explain("a gripping film").plot("film.png")   # attention beside saliency
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import torch

from attnkit.checkpoint import checkpoint_dir
from attnkit.data.tasks.sst import tokenize
from attnkit.data.tasks.text import checkpoint_split, encode
from attnkit.errors import ConfigError, InputError
from attnkit.evaluation.scores import Scores
from attnkit.explain.saliency import METHODS
from attnkit.explain.text_saliency import text_saliency
from attnkit.families import arguments as check
from attnkit.families.text.bundle import TextBundle, load_text_model
from attnkit.families.text.results import TextClassification
from attnkit.families.text.scoring import predict

MAX_WORDS = 1000  # words of one input sentence


class TextModel:
    """A loaded text classifier: ``config`` (the run's resolved config), ``vocab``, ``labels``
    (the class names), ``net`` (the torch module, in eval mode)."""

    family = "text"

    def __init__(self, bundle: TextBundle, path: Path | None = None):
        self.bundle, self.path = bundle, path
        self.config, self.vocab, self.labels = bundle.config, bundle.vocab, bundle.labels
        self.net = bundle.model

    @classmethod
    def load(cls, directory: str | Path, device: str = "auto") -> TextModel:
        return cls(load_text_model(directory, device), checkpoint_dir(directory))

    def __repr__(self) -> str:
        m = self.config.model
        return f"TextModel({m.encoder} + {m.attention}, labels={self.labels}, {self.path})"

    @property
    def has_attention(self) -> bool:
        return self.net.heads > 0

    def tokens(self, text: str, name: str = "text") -> list[str]:
        """The words the model reads of ``text`` (the tokenizer of the SST's trees)."""
        if not isinstance(text, str):
            raise InputError(f"{name}: give a sentence (a string), not {type(text).__name__}", name)
        words = tokenize(text, self.config.data.lowercase)
        if not words:
            raise InputError(f"{name}: empty sentence, no word to classify", name)
        if len(words) > MAX_WORDS:
            raise InputError(f"{name}: {len(words)} words, more than {MAX_WORDS}", name)
        return words

    def classify(self, text: str | Sequence[str], words: Sequence[list[str]] | None = None):
        """The model's answer on a sentence (or a list of them: a list of answers): the label,
        the probability of every class and the attention over the words. ``words``: each
        text's words as :meth:`tokens` read them already (the server reads a request's once,
        before it joins a batch); None: read here."""
        texts = check.texts(text, "text")
        if words is None:
            words = [
                self.tokens(t, f"inputs[{i}]" if len(texts) > 1 else "text")
                for i, t in enumerate(texts)
            ]
        answers = predict(self.net, words, self.vocab)
        results = [
            TextClassification(
                t,
                w,
                self.labels[a.label],
                {name: float(p) for name, p in zip(self.labels, a.probs, strict=True)},
                a.weights,
            )
            for t, w, a in zip(texts, words, answers, strict=True)
        ]
        return results[0] if isinstance(text, str) else results

    def explain(
        self,
        text: str | Sequence[str],
        method: str = "gradient",
        words: Sequence[list[str]] | None = None,
    ):
        """:meth:`classify` (``words`` as it takes them), with the gradient saliency of each
        answer over the words beside its attention (``method``: gradient, input_x_gradient or
        integrated_gradients)."""
        check.choice(method, "method", METHODS)
        results = self.classify(text, words)
        listed = [results] if isinstance(results, TextClassification) else results
        device = next(self.net.parameters()).device
        tokens, mask = encode([r.tokens for r in listed], self.vocab)
        targets = torch.tensor([self.labels.index(r.label) for r in listed], device=device)
        maps = text_saliency(self.net, tokens.to(device), mask.to(device), targets, method)
        for row, result in enumerate(listed):
            result.saliency = maps[row, : len(result.tokens)].cpu().numpy()
            result.method = method
        return results

    def draw(self, text: str, out: str | Path, explain: bool = False) -> Path:
        """The map ``attnkit plot`` draws of one sentence (.png, .svg or .pdf): the attention
        over its words (``explain``: beside their gradient saliency)."""
        result = self.explain(text) if explain or not self.has_attention else self.classify(text)
        result.plot(str(out)).clear()  # an explained one: beside its saliency
        return Path(out)

    def evaluate(
        self,
        split: str = "test",
        out: str | Path | None = None,
        data_dir: str | Path | None = None,
    ) -> Scores:
        """Score the checkpoint on ``split`` ("test" or "dev") and write scores.json,
        predictions.tsv and report.html to ``out`` (default ``RUN/eval/CHECKPOINT-SPLIT``).
        The split is read from ``data_dir`` (the SST's folder, default ``$ATTNKIT_DATA_DIR/sst``;
        for your own TSV files, the folder holding the split's file by its training name): the
        checkpoint's own data paths are not followed."""
        from attnkit.families.text.evaluate import evaluate_to_dir, summary

        check.choice(split, "split", ("test", "dev"))
        if self.path is None:
            raise ConfigError("evaluate: this model was not loaded from a checkpoint directory")
        scores = evaluate_to_dir(self.bundle, self.path, split, out, self._dir(data_dir))
        return Scores(scores, summary)

    def _examples(self, split: str | None, count: int, data_dir) -> list:
        """The first ``count`` examples of ``split`` (default test), read from ``data_dir``
        (:func:`~attnkit.data.tasks.text.checkpoint_split`)."""
        split = split or "test"
        check.choice(split, "split", ("test", "dev"))
        return checkpoint_split(self.config.data, split, self.labels, self._dir(data_dir))[:count]

    @staticmethod
    def _dir(data_dir):
        return None if data_dir is None else check.path(data_dir, "data_dir")

    def explain_report(
        self,
        texts: Sequence[str] | None = None,
        split: str | None = None,
        count: int = 10,
        method: str = "gradient",
        out: str | Path | None = None,
        picture: str | Path | None = None,
        data_dir: str | Path | None = None,
    ) -> dict:
        """``attnkit explain`` of a text model: the typed ``texts`` (or the first ``count``
        sentences of ``split``, test when neither is given) with attention beside saliency.
        Writes explanations.json, scores.json and report.html to ``out`` (default
        ``RUN/explain/CHECKPOINT``), or draws the one sentence to ``picture``. Returns the
        scores: the mean Spearman correlation of attention and saliency, and how often their
        most weighted word is the same."""
        from attnkit.families.text.evaluate import explained_records
        from attnkit.viz.report import write_report

        if texts and split:
            raise ConfigError("give TEXT or --split, not both")
        gold: list[int | None]
        if texts:
            words = [self.tokens(t, f"inputs[{i}]") for i, t in enumerate(texts)]
            gold = [None] * len(words)
        else:
            examples = self._examples(split, count, data_dir)
            words, gold = [e.words for e in examples], [e.label for e in examples]
        if picture is not None:
            if len(words) != 1:
                raise ConfigError(f"-o {picture}: draws one sentence; {len(words)} were given")
            return {"picture": str(self.draw(" ".join(words[0]), picture, explain=True))}
        answers = predict(self.net, words, self.vocab)
        records = explained_records(self.bundle, words, answers, gold, method)
        scores = _agreement(records, self.has_attention)
        scores = {"method": method, "sentences": len(records), **scores}
        base = self.path if self.path is not None else Path("runs/text/best")
        out = Path(out) if out is not None else base.parent / "explain" / base.name
        out.mkdir(parents=True, exist_ok=True)
        (out / "explanations.json").write_text(
            json.dumps([r.to_json() for r in records]), encoding="utf-8"
        )
        (out / "scores.json").write_text(json.dumps(scores, indent=1), encoding="utf-8")
        write_report(out / "report.html", f"attnkit explain ({method})", scores, records)
        return {**scores, "out": str(out)}

    def faithfulness(
        self,
        texts: str | Sequence[str] | None = None,
        *,
        split: str | None = None,
        count: int = 10,
        out: str | Path | None = None,
        permutations: int = 100,
        adversarial_steps: int = 100,
        ig_steps: int = 16,
        seed: int = 0,
        data_dir: str | Path | None = None,
    ):
        """Is the attention over the words an explanation of the label? ``texts`` (or the first
        ``count`` sentences of ``split``, test by default) questioned as
        :meth:`attnkit.api.Seq2SeqModel.faithfulness` questions a translation: erasure
        (comprehensiveness, sufficiency, AOPC) by attention, gradients, leave-one-out and
        random; rank agreement; the permutation test and the adversarial search. Writes
        scores.json and report.html to ``out`` (default ``RUN/faithfulness/CHECKPOINT``).
        Returns :class:`~attnkit.evaluation.scores.FaithfulnessScores`."""
        from attnkit.evaluation.faithfulness import Options
        from attnkit.evaluation.faithfulness_text import text_faithfulness
        from attnkit.evaluation.scores import FaithfulnessScores

        texts = [texts] if isinstance(texts, str) else texts
        if texts and split:
            raise ConfigError("give TEXT or --split, not both")
        if texts:
            words, inputs = [self.tokens(t, f"inputs[{i}]") for i, t in enumerate(texts)], "typed"
        else:
            examples = self._examples(split, count, data_dir)
            words, inputs = [e.words for e in examples], f"the first {count} of {split or 'test'}"
        options = Options(
            ig_steps=ig_steps,
            permutations=permutations,
            adversarial_steps=adversarial_steps,
            seed=seed,
        )
        base = self.path if self.path is not None else Path("runs/text/best")
        out = Path(out) if out is not None else base.parent / "faithfulness" / base.name
        return FaithfulnessScores(
            text_faithfulness(self.net, self.vocab, words, out, options, inputs, family=self.family)
        )


def _agreement(records, has_attention: bool) -> dict:
    """Mean Spearman's rho of attention and saliency over the sentences, and the percent whose
    most attended and most salient word agree (None without attention)."""
    from attnkit.evaluation.agreement import argmax_agreement, rank_correlation

    if not has_attention or not records:
        return {"rank_correlation": None, "argmax_agreement": None}
    pairs = [(r.weights, r.saliency) for r in records]
    return {
        "rank_correlation": rank_correlation(pairs),
        "argmax_agreement": argmax_agreement(pairs),
    }
