"""The faithfulness subject of a text classifier with attention pooling over a sentence's words.

It needs of the model only the interface the text-classification family agreed on
(``attnkit.models.text_classifier.TextClassifier``):

* ``forward(tokens (B, S) long, mask (B, S) bool, attention_override=None) -> (logits (B, C),
  weights)``, ``weights`` (B, S) for one attention or (B, R, S) for R heads (None for
  ``attention: none``); ``attention_override`` replaces the computed weights;
* ``embed(tokens) -> (B, S, D)`` and ``forward_embedded(embedded, mask, attention_override=None)``
  with the same outputs, for captum's gradients.

One unit (the sentence's label), its words as the positions. An erased word is removed from the
sentence; a sentence with every word erased is one padding token (embedding zero). A model with
R heads is ranked by the mean of its heads, and an attention given to it goes to every head.

The family's API object joins it in a few lines: its ``faithfulness(texts, split=, count=,
out=, permutations=, adversarial_steps=, ig_steps=, seed=)`` (the signature of
:meth:`attnkit.api.Seq2SeqModel.faithfulness`) turns the texts or the split's first sentences
into word lists and calls :func:`text_faithfulness` with its family's name, wrapping the result in
:class:`attnkit.evaluation.scores.FaithfulnessScores`; ``attnkit faithfulness`` reaches it
through the text family's ``faithfulness`` hook.

Shapes: S words, N rows, C classes, R heads, D embedding width.
"""

from __future__ import annotations

import torch
from torch import Tensor

from attnkit.evaluation.faithfulness import Subject
from attnkit.explain.saliency import embedding_attributions


class TextClassifierSubject(Subject):
    """``model`` (in eval mode), ``ids`` the sentence's token ids, ``words`` their labels."""

    def __init__(self, model, ids: list[int], words: list[str], pad_id: int = 0):
        self.model, self.pad_id = model, pad_id
        self.positions, self.units = list(words), ["label"]
        self.ids = torch.tensor(ids, dtype=torch.long).unsqueeze(0)  # (1, S)
        self.mask = torch.ones_like(self.ids, dtype=torch.bool)
        with torch.no_grad():
            logits, weights = model(self.ids, self.mask)
        self.targets = logits.argmax(-1)  # (U,) = (1,)
        self.weights = None if weights is None else _one_map(weights)[0].detach()  # (S,)

    def predict(self, keep: Tensor) -> Tensor:
        n, s = keep.shape
        width = max(1, int(keep.sum(1).max()))
        tokens = torch.full((n, width), self.pad_id, dtype=torch.long)
        mask = torch.zeros(n, width, dtype=torch.bool)
        for row in range(n):
            kept = self.ids[0, keep[row]]
            tokens[row, : len(kept)] = kept
            mask[row, : max(1, len(kept))] = True  # nothing kept: one padding token
        with torch.no_grad():
            logits, _ = self.model(tokens, mask)
        return logits.softmax(-1).unsqueeze(1)  # (N, 1, C)

    def maps(self) -> dict[str, Tensor]:
        return {} if self.weights is None else {"attention": self.weights.unsqueeze(0)}

    def attention(self) -> Tensor | None:
        return None if self.weights is None else self.weights.unsqueeze(0)  # (1, S)

    def gradients(self, method: str, steps: int) -> Tensor:
        target = int(self.targets[0])

        def forward(embedded: Tensor) -> Tensor:  # (B, S, D) -> (B, 1)
            mask = self.mask.expand(embedded.size(0), -1)
            logits, _ = self.model.forward_embedded(embedded, mask)
            return logits.log_softmax(-1)[:, target : target + 1]

        with torch.no_grad():
            embedded = self.model.embed(self.ids)
        return embedding_attributions(forward, embedded, method, steps)

    def predict_with_attention(self, weights: Tensor) -> Tensor:
        n = weights.size(0)
        override = weights[:, 0]  # (N, S)
        heads = getattr(self, "_heads", None)
        if heads is None:
            with torch.no_grad():
                _, w = self.model(self.ids, self.mask)
            heads = self._heads = w.size(1) if w.dim() == 3 else 0
        if heads:
            override = override.unsqueeze(1).expand(n, heads, -1)  # (N, R, S)
        logits, _ = self.model(
            self.ids.expand(n, -1), self.mask.expand(n, -1), attention_override=override
        )
        return logits.softmax(-1).unsqueeze(1)  # (N, 1, C)


def _one_map(weights: Tensor) -> Tensor:
    """(B, S) or (B, R, S) -> (B, S): the mean of the heads."""
    return weights.mean(1) if weights.dim() == 3 else weights


def text_faithfulness(
    net, vocab, sentences: list[list[str]], out, options, inputs: str, *, family: str
) -> dict:
    """What ``attnkit faithfulness`` computes for a text classifier: each sentence (a list of
    words; ``vocab.encode(words)`` gives their ids) questioned over its words, summed up,
    written to ``out`` (None: not written). ``inputs`` says where the sentences came from,
    ``family`` whose model it is (the caller's family, recorded in the scores)."""
    from attnkit.errors import AttnkitError
    from attnkit.evaluation.faithfulness_report import evaluate_subjects

    for i, words in enumerate(sentences):
        if not words:
            raise AttnkitError(f"input {i + 1} is empty: nothing to question")
    meta = {"family": family, "units": "the label; positions: words", "inputs": inputs}
    net.eval()
    subjects = (TextClassifierSubject(net, vocab.encode(w), w) for w in sentences)
    return evaluate_subjects(subjects, options, out, meta)
