"""A text classifier's answers on many sentences, and the attention of one as a record.

:func:`predict` runs a :class:`~attnkit.models.text_classifier.TextClassifier` over sentences
in batches of similar length and gives each its class probabilities and attention;
:func:`record_of` makes one answer an :class:`~attnkit.viz.records.AttentionRecord` with one row
(the predicted label) over the sentence's words, which every picture, report and inline view of
attnkit draws (a structured self-attention's R rows are its heads, their mean the map).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
from tqdm import tqdm

from attnkit.data.tasks.text import encode, length_batches
from attnkit.data.vocab import Vocab
from attnkit.models.text_classifier import TextClassifier
from attnkit.training import tensorboard as tb
from attnkit.viz.records import AttentionRecord


@dataclass
class Answer:
    """One sentence's answer: class probabilities (C,) and attention (S,) or (R, S) or None."""

    probs: np.ndarray
    weights: np.ndarray | None

    @property
    def label(self) -> int:
        return int(self.probs.argmax())


def log(verbose: bool, message: str) -> None:
    """One line on stderr, above any progress bar (``train.verbose``)."""
    if verbose:
        tqdm.write(message, file=sys.stderr)


def predict(
    model: TextClassifier, sentences: Sequence[Sequence[str]], vocab: Vocab, batch_size: int = 256
) -> list[Answer]:
    """The model's answer on each sentence (word lists), in order; the model in eval mode."""
    device = next(model.parameters()).device
    was_training = model.training
    model.eval()
    answers: list[Answer | None] = [None] * len(sentences)
    try:
        with torch.no_grad():
            for batch in length_batches([len(s) for s in sentences], batch_size, None):
                tokens, mask = encode([sentences[i] for i in batch], vocab)
                logits, weights = model(tokens.to(device), mask.to(device))
                probs = torch.softmax(logits.float(), -1).cpu().numpy()
                for row, i in enumerate(batch):
                    n = len(sentences[i])
                    w = None if weights is None else weights[row, ..., :n].float().cpu().numpy()
                    answers[i] = Answer(probs[row], w)
    finally:
        model.train(was_training)
    return answers


def accuracy(answers: Sequence[Answer], labels: Sequence[int]) -> float:
    """Share of answers whose label is right (0 for none)."""
    right = sum(a.label == y for a, y in zip(answers, labels, strict=True))
    return right / max(len(labels), 1)


def record_of(
    words: Sequence[str],
    answer: Answer,
    class_names: Sequence[str],
    label: int | None = None,
    saliency: np.ndarray | None = None,
    index: int | None = None,
) -> AttentionRecord:
    """One answer as a record: ``weights`` (1, S), the attention (the heads' mean, each head in
    ``heads`` (1, 1, R, S)); a model without attention: ``saliency`` as the map if given, else
    uniform weights. ``label``: the gold class, which makes the record right or wrong."""
    n = len(words)
    heads = None
    if answer.weights is None:
        weights = saliency if saliency is not None else np.full(n, 1.0 / max(n, 1))
        saliency = None
    elif answer.weights.ndim == 2:
        heads, weights = answer.weights[None, None], answer.weights.mean(0)
    else:
        weights = answer.weights
    predicted = class_names[answer.label]
    return AttentionRecord(
        " ".join(words),
        list(words),
        predicted,
        [predicted],
        np.asarray(weights, dtype=np.float64).reshape(1, n),
        reference=None if label is None else class_names[label],
        score=float(np.log(answer.probs[answer.label])),
        heads=heads,
        index=index,
        right=None if label is None else answer.label == label,
        saliency=None if saliency is None else np.asarray(saliency).reshape(1, n),
    )


def dev_figures(model: TextClassifier, examples, vocab: Vocab, class_names: Sequence[str]):
    """(tag, figure) of the attention over each of the first dev sentences (TensorBoard)."""
    from attnkit.viz.heatmap import plot_heatmap

    if model.heads == 0:
        return
    shown = examples[: tb.EXAMPLES]
    answers = predict(model, [e.words for e in shown], vocab)
    for i, (example, answer) in enumerate(zip(shown, answers, strict=True)):
        record = record_of(example.words, answer, class_names, example.label)
        yield f"attention/dev{i}", plot_heatmap(record, title=f"gold: {record.reference}")
