"""The faithfulness subjects of the vision soft-attention models, over image regions: the cells of
the CNN's feature map that the attention weighs (R = h x w).

* attention pooling (one map, one unit: the class);
* show, attend and tell (a map per output step, each step a unit, forced along the model's own
  greedy reading).

Erasing a region takes it out of what the attention may weigh (the softmax runs over the kept
regions only; an image with none kept gives a zero context): the region-level analogue of
deleting a word, where blanking pixels would leak into the neighbouring cells through the
CNN's receptive fields. (The reader's initial state, the mean of all regions, is left as it is.)
Gradients are taken with respect to the region features (the feature map's cells). An attention
given to the model replaces the computed one, through :class:`GivenAttention` for the reader.

RAM's hard glimpses have no weights to rank or replace: it has no subject here.

Shapes: R regions, C channels, T steps (units), V vocabulary, N rows.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator

import numpy as np
import torch
from torch import Tensor, nn

from attnkit.attention.scores import attend
from attnkit.attention.spatial import flatten_regions
from attnkit.errors import AttnkitError
from attnkit.evaluation.faithfulness import Subject
from attnkit.evaluation.faithfulness_seq2seq import GivenAttention
from attnkit.explain.saliency import embedding_attributions
from attnkit.models import show_attend_tell as sat

READER_STEPS = 6  # the digit reader reads at most 5 digits and its end token


def _region_labels(grid: tuple[int, int]) -> list[str]:
    h, w = grid
    return [f"({i},{j})" for i in range(h) for j in range(w)]


class PoolingSubject(Subject):
    """The attention-pooling classifier ``net`` (eval mode) on one image ``x`` (1, 1, H, W)."""

    def __init__(self, net: nn.Module, x: Tensor):
        self.net = net
        with torch.no_grad():
            self.fmap = net.encoder(x)  # (1, C, h, w)
            out = net(x)
        self.grid = tuple(self.fmap.shape[-2:])
        self.positions, self.units = _region_labels(self.grid), ["class"]
        self.targets = out.log_probs.argmax(-1).cpu()  # (1,)
        self.weights = out.weights.float().cpu()  # (1, R)

    def _classify(self, context: Tensor) -> Tensor:
        return self.net.classifier(self.net.dropout(context)).float().softmax(-1).unsqueeze(1)

    def predict(self, keep: Tensor) -> Tensor:
        n = keep.size(0)
        with torch.no_grad():
            fmap = self.fmap.expand(n, -1, -1, -1)
            context, _ = self.net.pool(fmap, keep.to(fmap.device))
            return self._classify(context).cpu()  # (N, 1, 10)

    def maps(self) -> dict[str, Tensor]:
        return {"attention": self.weights}

    def attention(self) -> Tensor:
        return self.weights

    def gradients(self, method: str, steps: int) -> Tensor:
        c, (h, w) = self.fmap.size(1), self.grid
        target = int(self.targets[0])

        def forward(regions: Tensor) -> Tensor:  # (B, R, C) -> (B, 1)
            fmap = regions.transpose(1, 2).reshape(-1, c, h, w)
            context, _ = self.net.pool(fmap)
            logits = self.net.classifier(self.net.dropout(context))
            return logits.log_softmax(-1)[:, target : target + 1]

        return embedding_attributions(forward, flatten_regions(self.fmap), method, steps).cpu()

    def predict_with_attention(self, weights: Tensor) -> Tensor:
        n = weights.size(0)
        regions = flatten_regions(self.fmap).expand(n, -1, -1)  # (N, R, C)
        context = attend(weights.to(regions), regions).squeeze(1)  # (N, C)
        return self._classify(context).cpu()


class KeptRegions(nn.Module):
    """Stands in for the reader's attention: the same scores, the softmax over the kept regions
    ``keep`` (N, R) only."""

    def __init__(self, inner: nn.Module, keep: Tensor):
        super().__init__()
        self.inner, self.keep = inner, keep

    def project_keys(self, keys: Tensor):
        return self.inner.project_keys(keys)

    def forward(self, query, keys, projected=None, mask=None):
        return self.inner(query, keys, projected, self.keep)


@contextlib.contextmanager
def _attention_of(net: nn.Module, make: Callable[[nn.Module], nn.Module]) -> Iterator[None]:
    inner = net.attention
    net.attention = make(inner)
    try:
        yield
    finally:
        net.attention = inner


class ReaderSubject(Subject):
    """The show-attend-tell digit reader ``net`` (eval mode) on one image ``x`` (1, 1, H, W),
    forced along its own greedy reading."""

    def __init__(self, net: nn.Module, x: Tensor):
        self.net, self.x = net, x
        tokens, weights, grid = net.greedy(x, READER_STEPS)  # (1, T), (1, T, R)
        ends = (tokens[0] == sat.EOS).nonzero()
        t = int(ends[0]) + 1 if len(ends) else tokens.size(1)
        self.targets = tokens[0, :t].cpu()  # (T,)
        self.inputs = torch.cat([torch.tensor([sat.BOS]), self.targets[:-1]]).unsqueeze(0)
        self.inputs = self.inputs.to(x.device)
        self.grid = tuple(grid)
        self.positions = _region_labels(self.grid)
        self.units = [str(int(k)) if int(k) < 10 else "</s>" for k in self.targets]
        self.weights = weights[0, :t].float().cpu()  # (T, R)

    def _run(self, n: int) -> Tensor:
        out = self.net(self.x.expand(n, -1, -1, -1), self.inputs.expand(n, -1))
        return out.logits.float().softmax(-1)  # (N, T, V)

    def predict(self, keep: Tensor) -> Tensor:
        with (
            torch.no_grad(),
            _attention_of(self.net, lambda a: KeptRegions(a, keep.to(self.x.device))),
        ):
            return self._run(keep.size(0)).cpu()

    def maps(self) -> dict[str, Tensor]:
        return {"attention": self.weights}

    def attention(self) -> Tensor:
        return self.weights

    def gradients(self, method: str, steps: int) -> Tensor:
        net, targets = self.net, self.targets.to(self.x.device)
        with torch.no_grad():
            regions = flatten_regions(net.encoder(self.x))  # (1, R, C)

        def forward(feats: Tensor) -> Tensor:  # (B, R, C) -> (B, T) log p of each own token
            mean = feats.mean(dim=1)
            state = (torch.tanh(net.init_h(mean)), torch.tanh(net.init_c(mean)))
            projected = net.attention.project_keys(feats)
            embedded = net.embed(self.inputs.expand(feats.size(0), -1))
            out = []
            for t in range(embedded.size(1)):
                logits, _, state = net.step(embedded[:, t], state, feats, projected)
                out.append(logits.log_softmax(-1)[:, targets[t]])
            return torch.stack(out, 1)

        return embedding_attributions(forward, regions, method, steps).cpu()

    def predict_with_attention(self, weights: Tensor) -> Tensor:
        given = weights.to(self.x.device)
        with _attention_of(self.net, lambda a: GivenAttention(a, given)):
            return self._run(weights.size(0)).cpu()


#: model.type -> the subject of one image (1, 1, H, W)
VISION_SUBJECTS: dict[str, Callable[[nn.Module, Tensor], Subject]] = {
    "attention_pooling": PoolingSubject,
    "show_attend_tell": ReaderSubject,
}


def vision_faithfulness(
    net, model_type: str, read_image, images, count, out, options, model: str = "", *, family: str
) -> dict:
    """What ``attnkit faithfulness`` computes for a vision checkpoint: ``images`` (or test
    images 0 .. count - 1), each made the model's input by ``read_image(image) -> (H, W) uint8
    pixels``, questioned over the regions, summed up, written to ``out`` (None: not written).
    ``model`` and ``family`` (the caller's) are recorded in the scores."""
    from attnkit.evaluation.faithfulness_report import evaluate_subjects
    from attnkit.evaluation.faithfulness_seq2seq import split_or_texts

    if model_type not in VISION_SUBJECTS:
        raise AttnkitError(
            f"faithfulness: a {model_type} model has no soft attention to question; "
            f"valid: {', '.join(VISION_SUBJECTS)}"
        )
    chosen = split_or_texts(images, None, count, lambda _: range(count))
    device = next(net.parameters()).device

    def subject(image):
        pixels = read_image(image)
        x = torch.from_numpy(np.ascontiguousarray(pixels)).float().div(255.0)[None, None]
        return VISION_SUBJECTS[model_type](net, x.to(device))

    meta = {
        "model": model,
        "family": family,
        "units": "the class" if model_type == "attention_pooling" else "reading steps",
        "inputs": f"test images 0-{len(chosen) - 1}" if images is None else "given",
    }
    net.eval()
    return evaluate_subjects((subject(i) for i in chosen), options, out, meta)
