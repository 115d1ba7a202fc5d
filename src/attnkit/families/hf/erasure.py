"""The faithfulness subject of a pretrained sequence classifier: ``attnkit faithfulness --model
hf:DIR`` and ``m.faithfulness(texts)`` question it through
:func:`attnkit.evaluation.faithfulness_report.evaluate_subjects`, as every family's models are.

One unit (the predicted label); the positions are the input's tokens other than the special ones
([CLS], [SEP], ``<s>``), which are never erased. An erased token is removed from the input
(the rows of a batch padded on the right, masked). The rankings: ``attention``, the last
layer's attention (heads averaged) of the position the classifier's head reads
(:func:`~attnkit.families.hf.gradients.reading_position`), and ``rollout``, the same row of
the attention rollout; the gradient methods as :func:`attnkit.families.hf.gradients.saliency`
computes them.

The permutation test and the adversarial search replace that one row of the last layer: while
the model runs, its last SDPA call's output at the read position becomes the given weights
(spread on every head, the special tokens keeping their own weight) times each head's values
(:func:`replaced_row`); the model's other layers and rows are its own.

Shapes: S positions (tokens), T all tokens, N rows of a batched call, C classes.
"""

from __future__ import annotations

import contextlib
import functools

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor

from attnkit.errors import AttnkitError
from attnkit.evaluation.faithfulness import Subject
from attnkit.explain.capture.patches import Patches, defining_modules
from attnkit.families.hf.gradients import reading_position, saliency


@contextlib.contextmanager
def replaced_row(model, layer: int, row: int, weights: Tensor):
    """Run ``model`` with the output of its ``layer``-th SDPA call of each forward (from 0) at
    query ``row`` replaced by ``weights`` (N, T) times the call's values (N, Hkv, T, D), the same
    weights for every head (key/value heads shared as the call shares them)."""
    original = F.scaled_dot_product_attention
    calls = [0]

    @functools.wraps(original)
    def sdpa(*args, **kwargs):
        out = original(*args, **kwargs)  # (N, H, T, D)
        calls[0] += 1
        if calls[0] - 1 != layer:
            return out
        value = args[2] if len(args) > 2 else kwargs["value"]
        value = value.repeat_interleave(out.size(1) // value.size(1), dim=1)  # (N, H, T, D)
        mixed = torch.einsum("nt,nhtd->nhd", weights.to(value.dtype), value)
        return out.index_copy(2, torch.tensor([row], device=out.device), mixed.unsqueeze(2))

    patches = Patches()
    patches.everywhere(defining_modules(model), original, sdpa)
    try:
        yield calls
    finally:
        patches.restore()
    if calls[0] <= layer:
        raise AttnkitError(f"the forward made {calls[0]} attention calls, not {layer + 1}")


class PretrainedClassifierSubject(Subject):
    """One text for a loaded :class:`~attnkit.families.hf.model.PretrainedModel` classifier."""

    def __init__(self, pm, text: str):
        self.pm = pm
        self.result = result = pm.classify(text)
        inputs, tokens = pm._text(text)
        self.ids = inputs.pop("input_ids")[0]  # (T,)
        inputs.pop("attention_mask", None)
        self.extra = {k: v[0] for k, v in inputs.items()}  # token_type_ids: (T,)
        special = set(pm.processor.all_special_ids)
        self.slots = [i for i, t in enumerate(self.ids.tolist()) if t not in special]
        if not self.slots:
            raise AttnkitError(f"{text!r}: only special tokens, nothing to erase")
        self.positions = [tokens.labels[i] for i in self.slots]
        self.units = ["label"]
        self.targets = torch.tensor([int(np.argmax(result.logits))])  # (1,)
        heads = result.parts["self"].heads  # (L, H, T, T)
        self.layers, self.read = heads.shape[0], reading_position(heads)
        self.row = torch.from_numpy(heads[-1, :, self.read].mean(0)).double()  # (T,)
        self.rolled = torch.from_numpy(result.rollout()[self.read]).double()  # (T,)
        self.mass = float(self.row[self.slots].sum())

    def _run(self, rows: list[Tensor]) -> Tensor:
        """The probabilities (N, 1, C) of inputs given as rows of positions to keep (into
        ``self.ids``), right-padded and masked."""
        pad = self.pm.model.config.pad_token_id
        width = max(len(r) for r in rows)
        if pad is None and len(rows) > 1:  # a causal model's head then reads one row a call
            return torch.cat([self._run([r]) for r in rows])
        pad = 0 if pad is None else pad
        ids = torch.full((len(rows), width), pad, dtype=torch.long)
        mask = torch.zeros(len(rows), width, dtype=torch.long)
        given = {k: torch.zeros(len(rows), width, dtype=v.dtype) for k, v in self.extra.items()}
        for n, kept in enumerate(rows):
            ids[n, : len(kept)], mask[n, : len(kept)] = self.ids[kept], 1
            for k, v in self.extra.items():
                given[k][n, : len(kept)] = v[kept]
        batch = {"input_ids": ids, "attention_mask": mask, **given}
        batch = {k: v.to(self.pm.device) for k, v in batch.items()}
        logits = self.pm.model(**batch).logits.float()
        return logits.softmax(-1).unsqueeze(1).cpu()

    def predict(self, keep: Tensor) -> Tensor:
        always = [i for i in range(len(self.ids)) if i not in self.slots]
        rows = []
        for mask in keep:
            kept = always + [self.slots[s] for s in torch.nonzero(mask).flatten().tolist()]
            rows.append(torch.tensor(sorted(kept), dtype=torch.long))
        with torch.no_grad():
            return self._run(rows)

    def maps(self) -> dict[str, Tensor]:
        return {
            "attention": self.row[self.slots].float().unsqueeze(0),
            "rollout": self.rolled[self.slots].float().unsqueeze(0),
        }

    def attention(self) -> Tensor:
        return (self.row[self.slots] / max(self.mass, 1e-30)).float().unsqueeze(0)  # (1, S)

    def gradients(self, method: str, steps: int) -> Tensor:
        maps = saliency(self.pm, self.result, method, steps)  # (1, T)
        return torch.from_numpy(maps[:, self.slots])

    def predict_with_attention(self, weights: Tensor) -> Tensor:
        n = weights.size(0)
        if self.pm.model.config.pad_token_id is None and n > 1:  # one row a forward (_run)
            return torch.cat([self.predict_with_attention(weights[i : i + 1]) for i in range(n)])
        full = self.row.to(weights.dtype).expand(n, -1).clone()  # (N, T)
        slots = torch.tensor(self.slots)
        full = full.index_copy(1, slots, weights[:, 0] * self.mass)
        everything = torch.arange(len(self.ids))
        with replaced_row(self.pm.model, self.layers - 1, self.read, full.to(self.pm.device)):
            return self._run([everything] * n)


def read_texts(path, count: int | None = None) -> list[str]:
    """The texts of a file, one a line (at most ``count``): a line that is an SST tree
    (``(3 (2 The) ...)``) gives its words, a ``label<TAB>text`` line its text, any other line
    itself. A blank line or a malformed tree is a DataError naming file and line."""
    from attnkit.data.tasks.parallel import read_lines
    from attnkit.data.tasks.sst import parse_tree
    from attnkit.errors import DataError

    texts = []
    for number, line in enumerate(read_lines(path), start=1):
        if count is not None and len(texts) >= count:
            break
        if line.lstrip().startswith("("):
            try:
                line = " ".join(parse_tree(line).words)
            except ValueError as exc:
                raise DataError(str(exc), path, number) from None
        elif "\t" in line:
            line = line.partition("\t")[2]
        texts.append(line.strip())
    return texts


def faithfulness(pm, texts=None, data=None, count: int = 10, out=None, **options):
    """:meth:`PretrainedModel.faithfulness <attnkit.families.hf.model.PretrainedModel
    .faithfulness>`: ``texts`` (a string or a list) or the first ``count`` of the file
    ``data`` questioned; ``options``: :class:`~attnkit.evaluation.faithfulness.Options`'."""
    from attnkit.evaluation.faithfulness import Options
    from attnkit.evaluation.faithfulness_report import evaluate_subjects
    from attnkit.evaluation.scores import FaithfulnessScores

    if pm.kind.task != "classify" or pm.takes_images:
        raise AttnkitError(
            f"faithfulness: {pm.name} is {pm.kind.words}; the tests question a text classifier"
        )
    if (texts is None) == (data is None):
        raise AttnkitError("faithfulness: give the TEXTs or a --data FILE (one of the two)")
    if data is not None:
        texts, inputs = read_texts(data, count), f"the first {count} of {data}"
    else:
        texts, inputs = ([texts] if isinstance(texts, str) else list(texts)), "typed"
    meta = {"family": "hf", "model": pm.name, "units": "the label; positions: tokens"}
    subjects = (PretrainedClassifierSubject(pm, t) for t in texts)
    scores = evaluate_subjects(subjects, Options(**options), out, {**meta, "inputs": inputs})
    return FaithfulnessScores(scores)
