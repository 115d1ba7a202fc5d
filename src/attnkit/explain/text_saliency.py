"""Gradient saliency of a text classifier: how much its answer depends on each word.

For each sentence, the attribution of the log-probability of a class (its predicted one, unless
another is asked) to each word's embedding, with captum on the model's embedding layer:

* ``gradient``: the L2 norm of the gradient over the embedding;
* ``input_x_gradient``: |e_i . gradient| (summed over the embedding);
* ``integrated_gradients``: the same product integrated from the zero (padding) embedding to
  e_i, ``steps`` points (Sundararajan et al. 2017).

Each sentence's scores are normalised to sum to 1, so they read like its attention and the two
can be compared word by word; padding gets 0. A model without attention has saliency all the
same.
"""

from __future__ import annotations

import torch
from captum.attr import LayerGradientXActivation, LayerIntegratedGradients
from torch import Tensor

from attnkit.data.vocab import PAD_ID
from attnkit.explain.saliency import METHODS
from attnkit.models.text_classifier import TextClassifier


def text_saliency(
    model: TextClassifier,
    tokens: Tensor,
    mask: Tensor,
    targets: Tensor,
    method: str = "gradient",
    steps: int = 16,
) -> Tensor:
    """tokens (B, S), mask (B, S), targets (B,) class ids -> (B, S) saliency, each row summing
    to 1 over its words (0 on padding). The model is explained in eval mode."""
    if method not in METHODS:
        raise ValueError(f"unknown saliency method {method!r}; valid: {', '.join(METHODS)}")

    def log_probs(tokens: Tensor, mask: Tensor) -> Tensor:
        return torch.log_softmax(model(tokens, mask)[0].float(), -1)  # (B, C)

    was_training = model.training
    model.eval()
    try:
        with torch.enable_grad():
            if method == "integrated_gradients":
                explainer = LayerIntegratedGradients(log_probs, model.embedding)
                attr = explainer.attribute(
                    tokens,
                    baselines=torch.full_like(tokens, PAD_ID),
                    target=targets,
                    additional_forward_args=(mask,),
                    n_steps=steps,
                )
                scores = attr.sum(-1).abs()
            else:
                explainer = LayerGradientXActivation(
                    log_probs, model.embedding, multiply_by_inputs=method == "input_x_gradient"
                )
                attr = explainer.attribute(tokens, target=targets, additional_forward_args=(mask,))
                scores = attr.sum(-1).abs() if method == "input_x_gradient" else attr.norm(dim=-1)
    finally:
        model.train(was_training)
    scores = scores.detach() * mask
    return scores / scores.sum(-1, keepdim=True).clamp_min(1e-30)
