"""The training loss: shards normalised by the whole batch's tokens add up to its gradient."""

import random

import torch

from attnkit.data.batching import Example, collate
from attnkit.models.seq2seq import Seq2Seq, Seq2SeqConfig
from attnkit.training.distributed import shard
from attnkit.training.loss import token_loss_backward


def _batch(n=7, seed=0):
    rng = random.Random(seed)
    examples = [
        Example(
            src=[rng.randrange(4, 12) for _ in range(rng.randint(1, 6))] + [2],
            tgt=[rng.randrange(4, 10) for _ in range(rng.randint(1, 5))],
            index=i,
        )
        for i in range(n)
    ]
    return collate(examples)


def _model():
    torch.manual_seed(0)
    cfg = Seq2SeqConfig(
        embedding_dim=8, encoder_hidden=8, decoder_hidden=16, attention_dim=8, dropout=0.0
    )
    return Seq2Seq(cfg, 12, 10).train()


def _grads(model):
    grads = [p.grad.clone() for p in model.parameters()]
    model.zero_grad(set_to_none=True)
    return grads


def test_shards_normalised_by_the_whole_batch_add_up_to_its_gradient():
    model, batch = _model(), _batch()
    total = batch.num_target_tokens
    loss_one, correct_one, tokens_one = token_loss_backward(model, batch, total, 0.1)
    whole = _grads(model)
    summed, parts = None, []
    for rank in range(3):
        parts.append(token_loss_backward(model, shard(batch, rank, 3), total, 0.1))
        grads = _grads(model)
        summed = grads if summed is None else [a + b for a, b in zip(summed, grads)]
    assert abs(sum(p[0] for p in parts) - loss_one) < 1e-4 * abs(loss_one)
    assert sum(p[1] for p in parts) == correct_one and sum(p[2] for p in parts) == tokens_one
    for a, b in zip(summed, whole):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-6)


def test_scale_multiplies_the_gradient_not_the_reported_loss():
    model, batch = _model(), _batch()
    plain = token_loss_backward(model, batch, batch.num_target_tokens, 0.0)
    one = _grads(model)
    doubled = token_loss_backward(model, batch, batch.num_target_tokens, 0.0, scale=2.0)
    two = _grads(model)
    assert doubled == plain
    for a, b in zip(two, one):
        torch.testing.assert_close(a, 2 * b)
