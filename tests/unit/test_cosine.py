"""The NTM's content-based cosine score (attention/cosine.py, scores.cosine_scores): sharpening by
beta, invariance to the keys' norm, the learned key strength."""

import math

import torch

from attnkit.attention import AttentionOptions, build_attention, cosine_scores, masked_softmax
from attnkit.attention.cosine import inverse_softplus


def _entropy(weights: torch.Tensor) -> torch.Tensor:
    return -(weights * weights.clamp_min(1e-30).log()).sum(-1)


def test_beta_sharpens_towards_the_most_similar_key():
    g = torch.Generator().manual_seed(0)
    query, keys = torch.randn(3, 4, 6, generator=g), torch.randn(3, 7, 6, generator=g)
    mask = torch.ones(3, 1, 7, dtype=torch.bool)
    entropies = [
        _entropy(masked_softmax(cosine_scores(query, keys, beta), mask)) for beta in (0.0, 2, 20)
    ]
    torch.testing.assert_close(entropies[0], torch.full((3, 4), math.log(7)))  # beta 0: uniform
    assert (entropies[1] < entropies[0]).all() and (entropies[2] < entropies[1]).all()
    sharp = masked_softmax(cosine_scores(query, keys, 1e4), mask)
    cos = cosine_scores(query, keys, 1.0)
    assert (sharp.argmax(-1) == cos.argmax(-1)).all() and (sharp.max(-1).values > 0.99).all()


def test_cosine_scores_ignore_the_norm_of_query_and_keys_and_take_beta_per_row():
    g = torch.Generator().manual_seed(1)
    query, keys = torch.randn(2, 3, 5, generator=g), torch.randn(2, 4, 5, generator=g)
    scales = torch.rand(2, 4, 1, generator=g) * 10 + 0.1
    torch.testing.assert_close(
        cosine_scores(3 * query, keys * scales, 1.0), cosine_scores(query, keys, 1.0)
    )
    assert cosine_scores(query, keys, 1.0).abs().max() <= 1 + 1e-6
    beta = torch.tensor([[1.0, 2.0, 3.0], [0.5, 0.0, 4.0]])  # (B, T)
    torch.testing.assert_close(
        cosine_scores(query, keys, beta), cosine_scores(query, keys, 1.0) * beta[..., None]
    )


def test_the_module_starts_at_the_configured_beta_and_learns_it():
    assert abs(torch.nn.functional.softplus(torch.tensor(inverse_softplus(5.0))) - 5.0) < 1e-5
    torch.manual_seed(0)
    att = build_attention("cosine", 8, 6, 8, 1, AttentionOptions(beta=5.0))
    with torch.no_grad():
        att.strength.weight.zero_()
    query, keys = torch.randn(2, 3, 8), torch.randn(2, 4, 6)
    torch.testing.assert_close(att.beta(query), torch.full((2, 3), 5.0))
    _, weights = att(query, keys)
    (weights[..., 0] ** 2).sum().backward()
    assert att.strength.bias.grad.abs() > 0 and att.key.weight.grad.abs().sum() > 0
