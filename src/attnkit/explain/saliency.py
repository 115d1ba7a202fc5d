"""Gradient saliency of a seq2seq model: the *implicit* attention beside the explicit one.

For output step j and source token i, how much the log-probability of the j-th output token
depends on the i-th source token's embedding (Graves 2012 calls the matrix of these gradients
the sequential Jacobian; Simonyan et al. 2014 made them saliency maps). Attributions come from
captum, on the encoder's embedding layer, one output step at a time, with the decoder forced
along a given output (the model's own or a reference), so each row explains one token of that
output:

* ``gradient``: |d log p(y_j) / d e_i|, the L2 norm of the gradient over the embedding;
* ``input_x_gradient``: |e_i . d log p(y_j) / d e_i| (gradient times input, summed over the
  embedding);
* ``integrated_gradients``: the same product integrated along the path from a zero embedding
  (the padding token's) to e_i (Sundararajan et al. 2017), ``steps`` points, batched: the
  scaled copies of the inputs go through the model together, as many steps per pass as fit in
  ``MAX_IG_ROWS`` rows (and at least one step per pass).

The gradient methods differentiate many output steps in one pass: the batch is repeated once per
step, and each copy differentiates only its own step's log-probability (the copies do not
interact in eval mode), ``MAX_GRADIENT_ROWS`` rows a pass; a pass costs about what one step's
pass did, so a map of T rows takes about T / (MAX_GRADIENT_ROWS / B) passes instead of T.

Each row is normalised to sum to 1, so a map reads like an attention matrix and the two can be
compared cell by cell. A model without attention has a saliency map all the same.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from captum.attr import LayerGradientXActivation, LayerIntegratedGradients
from torch import Tensor

from attnkit.accel.backend import resolve as resolve_backend
from attnkit.data.vocab import BOS_ID, EOS_ID, PAD_ID

METHODS = ("gradient", "input_x_gradient", "integrated_gradients")
#: integrated gradients: (input x step) rows per forward pass, unless one step needs more
MAX_IG_ROWS = 1024
#: gradient and input x gradient: (input x output step) rows per forward pass (at least B)
MAX_GRADIENT_ROWS = 512


def _forced_log_probs(model) -> Callable[[Tensor, Tensor, Tensor, Tensor], Tensor]:
    """The function captum differentiates: src (B, S), src_lengths (B,), tgt_in (B, T),
    tgt_out (B, T) -> (B, T) log-probability of each forced output token."""

    def forward(src: Tensor, src_lengths: Tensor, tgt_in: Tensor, tgt_out: Tensor) -> Tensor:
        logits, _ = model(src, src_lengths, tgt_in)  # (B, T, V)
        logp = torch.log_softmax(logits.float(), dim=-1)
        return logp.gather(2, tgt_out.unsqueeze(2)).squeeze(2)  # (B, T)

    return forward


def saliency_maps(
    model,
    src: Tensor,
    src_lengths: Tensor,
    targets: list[list[int]],
    method: str = "gradient",
    steps: int = 16,
) -> list[Tensor]:
    """src (B, S), src_lengths (B,), targets: B lists of output ids (no ``</s>``) -> B maps
    (len + 1, S_b), rows = output tokens with ``</s>``, columns = the true source tokens, each
    row summing to 1 (a row whose gradients all vanish stays 0).

    The model is explained as it is: in eval mode, with the reference backend (plain autograd)
    for the duration of the call.
    """
    if method not in METHODS:
        raise ValueError(f"unknown saliency method {method!r}; valid: {', '.join(METHODS)}")
    if len(targets) != src.size(0):
        raise ValueError(f"{len(targets)} targets for a batch of {src.size(0)} sources")
    b, device = src.size(0), src.device
    steps_out = max(len(t) for t in targets) + 1
    tgt_in = torch.full((b, steps_out), PAD_ID, dtype=torch.long)
    tgt_out = torch.full((b, steps_out), PAD_ID, dtype=torch.long)
    for row, target in enumerate(targets):
        tgt_in[row, : len(target) + 1] = torch.tensor([BOS_ID, *target])
        tgt_out[row, : len(target) + 1] = torch.tensor([*target, EOS_ID])
    tgt_in, tgt_out = tgt_in.to(device), tgt_out.to(device)
    was_training, backend = model.training, model.backend
    model.eval()
    model.set_backend(resolve_backend("reference", device))
    try:
        # cuDNN's RNNs have no backward pass in eval mode; the model is explained in eval mode
        # (no dropout), so on a GPU its RNNs run torch's own kernels for the call
        with torch.backends.cudnn.flags(enabled=False):
            if method == "integrated_gradients":
                rows = [
                    _integrated_step(model, src, src_lengths, tgt_in, tgt_out, j, steps)
                    for j in range(steps_out)
                ]  # each (B, S)
                maps = torch.stack(rows, 1)  # (B, T, S)
            else:
                per_pass = max(1, MAX_GRADIENT_ROWS // b)
                chunks = [
                    range(j, min(j + per_pass, steps_out)) for j in range(0, steps_out, per_pass)
                ]
                forced = (model, src, src_lengths, tgt_in, tgt_out)
                maps = torch.cat([_attribute_steps(*forced, js, method) for js in chunks], 1)
    finally:
        model.set_backend(backend)
        model.train(was_training)
    maps = maps / maps.sum(-1, keepdim=True).clamp_min(1e-30)
    return [
        maps[row, : len(t) + 1, : int(src_lengths[row])].detach().cpu()
        for row, t in enumerate(targets)
    ]


def _attribute_steps(model, src, src_lengths, tgt_in, tgt_out, js: range, method) -> Tensor:
    """(B, J, S) gradient or input x gradient of output steps ``js``, in one forward and
    backward pass over the batch repeated J times."""
    b, k = src.size(0), len(js)
    # row i * k + n is a copy of example i that differentiates step js[n]
    picks = torch.tensor(list(js), device=src.device).repeat(b)
    copies = [t.repeat_interleave(k, 0) for t in (src, src_lengths, tgt_in, tgt_out)]
    forced = _forced_log_probs(model)

    def forward(src, src_lengths, tgt_in, tgt_out, picks):
        logp = forced(src, src_lengths, tgt_in, tgt_out)  # (B * J, T)
        return logp.gather(1, picks.unsqueeze(1)).squeeze(1)  # (B * J,)

    with torch.enable_grad():
        explainer = LayerGradientXActivation(
            forward, model.encoder.embed, multiply_by_inputs=method == "input_x_gradient"
        )
        attr = explainer.attribute(copies[0], additional_forward_args=(*copies[1:], picks))
    attr = attr.sum(-1).abs() if method == "input_x_gradient" else attr.norm(dim=-1)
    return attr.view(b, k, -1)  # (B, J, S)


def _integrated_step(model, src, src_lengths, tgt_in, tgt_out, j, steps) -> Tensor:
    """(B, S) non-negative integrated-gradients attribution of output step ``j`` to each source
    token (the gradient methods: :func:`_attribute_steps`)."""
    forward = _forced_log_probs(model)
    layer = model.encoder.embed
    extra = (src_lengths, tgt_in, tgt_out)
    with torch.enable_grad():
        explainer = LayerIntegratedGradients(forward, layer)
        attr = explainer.attribute(
            src,
            baselines=torch.full_like(src, PAD_ID),  # the padding embedding is zero
            target=j,
            additional_forward_args=extra,
            n_steps=steps,
            # the steps' scaled copies go through the model together, MAX_IG_ROWS at most
            # (but always one step's B rows)
            internal_batch_size=src.size(0) * max(1, min(steps, MAX_IG_ROWS // src.size(0))),
        )
    return attr.sum(-1).abs()


def _gradient_norm(forward, embedded, unit, steps):
    from captum.attr import Saliency

    return Saliency(forward).attribute(embedded, target=unit, abs=False).norm(dim=-1)


def _input_x_gradient(forward, embedded, unit, steps):
    from captum.attr import InputXGradient

    return InputXGradient(forward).attribute(embedded, target=unit).sum(-1).abs()


def _integrated_gradients(forward, embedded, unit, steps):
    from captum.attr import IntegratedGradients

    attr = IntegratedGradients(forward).attribute(
        embedded,
        baselines=torch.zeros_like(embedded),
        target=unit,
        n_steps=steps,
        internal_batch_size=max(1, min(steps, MAX_IG_ROWS)),
    )
    return attr.sum(-1).abs()


#: method -> (forward, embedded (1, S, D), unit, steps) -> (1, S) attribution
EMBEDDING_METHODS: dict[str, Callable] = {
    "gradient": _gradient_norm,
    "input_x_gradient": _input_x_gradient,
    "integrated_gradients": _integrated_gradients,
}


def embedding_attributions(
    forward: Callable[[Tensor], Tensor], embedded: Tensor, method: str = "gradient", steps: int = 16
) -> Tensor:
    """Attribution to the positions of one embedded input, for a model that can run from its
    embeddings (a classifier's words, an image's regions).

    ``forward``: embedded (B, S, D) -> (B, U) the log-probability of each unit's decided class;
    ``embedded`` (1, S, D) -> (U, S), each row summing to 1: ``gradient`` the L2 norm of the
    gradient over D, ``input_x_gradient`` and ``integrated_gradients`` (from a zero input,
    ``steps`` points, batched) the absolute sum over D (captum computes all three).
    """
    if method not in EMBEDDING_METHODS:
        raise ValueError(f"unknown saliency method {method!r}; valid: {', '.join(METHODS)}")
    embedded = embedded.detach().requires_grad_(True)
    with torch.enable_grad():
        units = forward(embedded).size(1)
        rows = [
            EMBEDDING_METHODS[method](forward, embedded, u, steps)[0].detach() for u in range(units)
        ]
    maps = torch.stack(rows)  # (U, S)
    return maps / maps.sum(-1, keepdim=True).clamp_min(1e-30)
