"""A training step frees its memory when its tensors go out of scope: nothing it builds is kept
alive by a reference cycle until the garbage collector happens to run (which grew the handwritten
loops' training to gigabytes)."""

import gc

import pytest
import torch

from attnkit.accel.backend import resolve
from attnkit.data.vocab import PAD_ID
from attnkit.models.seq2seq import Seq2Seq, Seq2SeqConfig


def _tensors_in_cycles(step) -> list[torch.Tensor]:
    """The tensors that only the garbage collector frees after ``step()`` returns."""
    gc.collect()
    gc.disable()
    gc.set_debug(gc.DEBUG_SAVEALL)  # what the collector finds unreachable lands in gc.garbage
    try:
        step()
        gc.collect()
        return [o for o in gc.garbage if isinstance(o, torch.Tensor)]
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        gc.enable()


@pytest.mark.parametrize("backend", ["native", "fused", "reference"])
@pytest.mark.parametrize("style", ["luong", "bahdanau"])
@pytest.mark.parametrize("rnn", ["gru", "lstm"])
def test_a_training_step_leaves_no_tensor_in_a_reference_cycle(backend, style, rnn):
    cfg = Seq2SeqConfig(
        attention="bahdanau",
        decoder=style,
        rnn=rnn,
        embedding_dim=8,
        encoder_hidden=8,
        decoder_hidden=16,
        attention_dim=8,
        dropout=0.3,
    )
    torch.manual_seed(0)
    model = Seq2Seq(cfg, 12, 10).train()
    model.set_backend(resolve(backend, "cpu"))
    src = torch.tensor([[5, 6, 7, 8, 3], [9, 4, 3, 0, 0], [6, 3, 0, 0, 0]])
    tgt_in = torch.tensor([[2, 7, 9, 4], [2, 5, 0, 0], [2, 8, 6, 0]])

    def step():
        logits, _ = model(src, (src != PAD_ID).sum(1), tgt_in)
        logits.logsumexp(-1).sum().backward()

    assert _tensors_in_cycles(step) == []
    assert model.decoder.rnn.weight_hh_l0.grad is not None  # the step did train
