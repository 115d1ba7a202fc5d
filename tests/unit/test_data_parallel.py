"""Data-parallel CPU processes give the gradient one process gives for the whole batch."""

import random

import pytest
import torch

from attnkit.data.batching import Example, collate
from attnkit.errors import AttnkitError
from attnkit.models.seq2seq import Seq2Seq, Seq2SeqConfig
from attnkit.training.data_parallel import GradientWorkers, shard, shard_loss_backward

EOS = 3


def _model(rnn: str) -> Seq2Seq:
    torch.manual_seed(0)
    cfg = Seq2SeqConfig(attention="bahdanau", decoder="luong", rnn=rnn, embedding_dim=8, encoder_hidden=8,
                        decoder_hidden=16, attention_dim=8, dropout=0.0)
    return Seq2Seq(cfg, 12, 10).train()


def _batch(rows: int = 7):
    rng = random.Random(0)
    examples = [Example(src=[rng.randrange(4, 12) for _ in range(rng.randint(1, 6))] + [EOS],
                        tgt=[rng.randrange(4, 10) for _ in range(rng.randint(1, 5))], index=i) for i in range(rows)]
    return collate(examples)


def _grads(model):
    return [p.grad.clone() for p in model.parameters()]


def test_shards_partition_the_rows_and_drop_their_extra_padding():
    batch = _batch()
    parts = [shard(batch, r, 2) for r in range(2)]
    assert sorted(parts[0].indices + parts[1].indices) == sorted(batch.indices)
    assert sum(p.num_target_tokens for p in parts) == batch.num_target_tokens
    for p in parts:
        assert p.src.size(1) == int(p.src_lengths.max())
        assert p.tgt_out.size(1) == int((p.tgt_out != 0).sum(1).max())
        target_lengths = (p.tgt_out != 0).sum(1)
        assert torch.all(target_lengths[:-1] >= target_lengths[1:])  # still longest target first


@pytest.mark.parametrize("rnn", ["gru", "lstm"])
def test_two_processes_give_the_whole_batch_gradient(rnn):
    batch = _batch()
    model = _model(rnn)
    loss_one, correct_one, tokens_one = shard_loss_backward(model, batch, batch.num_target_tokens, 0.1)
    expected = _grads(model)
    model.zero_grad(set_to_none=True)
    with GradientWorkers(model, processes=2, label_smoothing=0.1) as workers:
        loss_two, correct_two, tokens_two = workers.forward_backward(batch)
        got = _grads(model)
        # The helper shares the weights: an in-place step here changes what it computes next.
        with torch.no_grad():
            for p in model.parameters():
                p.sub_(0.1 * p.grad)
        model.zero_grad(set_to_none=True)
        workers.forward_backward(batch)
        after_step = _grads(model)
    for e, g in zip(expected, got):
        torch.testing.assert_close(g, e, rtol=1e-5, atol=1e-6)
    assert tokens_two == tokens_one == batch.num_target_tokens
    assert correct_two == correct_one
    assert loss_two == pytest.approx(loss_one, rel=1e-5)
    model.zero_grad(set_to_none=True)
    shard_loss_backward(model, batch, batch.num_target_tokens, 0.1)
    for e, g in zip(_grads(model), after_step):
        torch.testing.assert_close(g, e, rtol=1e-5, atol=1e-6)


def test_a_failing_helper_is_reported():
    model = _model("gru")
    batch = _batch()
    batch.src[1, 0] = 99  # out of the source vocabulary: the helper's embedding lookup fails
    with GradientWorkers(model, processes=2) as workers:
        with pytest.raises(AttnkitError, match="gradient process 1 failed"):
            workers.forward_backward(batch)


def test_needs_at_least_two_processes():
    with pytest.raises(AttnkitError, match="at least 2"):
        GradientWorkers(_model("gru"), processes=1)
