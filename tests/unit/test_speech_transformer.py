"""The Transformer over frames: the front end's subsampling, masks over padded batches (an
utterance encodes and decodes alike alone or in a batch), greedy decoding, a little learning,
and its keys checked."""

from __future__ import annotations

import pytest
import torch

from attnkit.errors import ConfigError
from attnkit.models.las import LASConfig
from attnkit.models.speech_transformer import SpeechTransformer

SMALL = LASConfig(
    kind="transformer", model_dim=32, heads=2, ff_dim=64, encoder_layers=1, decoder_layers=1
)
SMALL.dropout = 0.0


def _model(seed: int = 0, vocab: int = 12) -> SpeechTransformer:
    torch.manual_seed(seed)
    return SpeechTransformer(SMALL, n_mels=8, vocab_size=vocab, bos=0, eos=1).eval()


def test_the_front_end_subsamples_by_four_rounding_up():
    model = _model()
    assert model.listener.stride == 4
    states, lengths = model.listener(torch.randn(3, 41, 8), torch.tensor([41, 17, 1]))
    assert states.shape == (3, 11, 32)  # 41 -> 21 -> 11
    assert lengths.tolist() == [11, 5, 1]


def test_teacher_forcing_gives_distributions_and_attention_over_real_frames_only():
    model = _model()
    features, lengths = torch.randn(2, 40, 8), torch.tensor([40, 20])
    targets = torch.tensor([[3, 4, 5, 1], [7, 1, -1, -1]])
    log_probs, weights = model(features, lengths, targets)
    assert log_probs.shape == (2, 4, 12) and weights.shape == (2, 4, 10)
    assert torch.allclose(log_probs.exp().sum(-1), torch.ones(2, 4), atol=1e-5)
    assert torch.allclose(weights.sum(-1), torch.ones(2, 4), atol=1e-5)
    assert (
        float(weights.detach()[1, :, 5:].abs().max()) == 0.0
    )  # frames 5.. are the second's padding


def test_an_utterance_is_heard_alike_alone_and_padded_in_a_batch():
    model = _model()
    features, lengths = torch.randn(2, 37, 8), torch.tensor([37, 21])
    features[1, 21:] = 0.0  # the batch's zero padding
    targets = torch.tensor([[3, 4, 1], [5, 1, -1]])
    log_probs, weights = model(features, lengths, targets)
    alone, alone_weights = model(features[1:, :21], lengths[1:], targets[1:, :2])
    assert torch.allclose(alone, log_probs[1:, :2], atol=1e-5)
    assert torch.allclose(alone_weights, weights[1:, :2, :6], atol=1e-6)
    found, attention = model.greedy(features, lengths, 5)
    found_alone, attention_alone = model.greedy(features[1:, :21], lengths[1:], 5)
    steps = found_alone.size(1)
    assert torch.equal(found_alone[0], found[1, :steps])
    assert torch.allclose(attention_alone[0], attention[1, :steps, :6], atol=1e-6)


def test_greedy_decoding_takes_the_argmax_that_teacher_forcing_scores():
    """Each greedy output is the argmax of the teacher-forced distribution given the outputs
    before it (the incremental cache computes what the whole-target pass does), and it
    stops once every row has said </s>."""
    model = _model(3)
    features, lengths = torch.randn(2, 24, 8), torch.tensor([24, 16])
    found, weights = model.greedy(features, lengths, 6)
    assert found.shape[1] <= 6 and weights.shape == (2, found.shape[1], 6)
    log_probs, forced = model(features, lengths, found)
    assert torch.equal(log_probs.argmax(-1), found)
    assert torch.allclose(forced, weights, atol=1e-5)
    with torch.no_grad():  # a model that says </s> at once stops after one step
        model.decoder.output.bias.fill_(-1e4)
        model.decoder.output.bias[1] = 1e4
    stop, _ = model.greedy(features, lengths, 6)
    assert stop.tolist() == [[1], [1]]


def test_it_learns_which_sound_comes_first():
    """60 steps: the loss falls below a twentieth of where it began (0.003-0.005 of it on
    seeds 0-5) and both utterances are spelled right, in the heard order (all of seeds 0-5)."""
    model = _model(0, vocab=5).train()
    low, high = torch.zeros(1, 16, 8), torch.zeros(1, 16, 8)
    low[..., :4], high[..., 4:] = 1.0, 1.0
    features = torch.cat([torch.cat([low, high], 1), torch.cat([high, low], 1)])  # (2, 32, 8)
    features = features + 0.1 * torch.randn_like(features)
    targets = torch.tensor([[3, 4, 1], [4, 3, 1]])
    lengths = torch.tensor([32, 32])
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
    losses = []
    for _ in range(60):
        log_probs, _ = model(features, lengths, targets)
        loss = -log_probs.gather(-1, targets[..., None]).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(float(loss.detach()))
    assert losses[-1] < 0.05 * losses[0]
    found, _ = model.eval().greedy(features, lengths, 4)
    assert found[:, :3].tolist() == targets.tolist()


@pytest.mark.parametrize(
    "key, value, message",
    [
        ("kind", "rnnt", "model: kind: 'rnnt' is not one of las, ctc, transformer"),
        ("model_dim", 0, "model.model_dim: must be at least 1, got 0"),
        ("heads", 0, "model.heads: must be at least 1, got 0"),
        ("decoder_layers", 0, "model.decoder_layers: must be at least 1, got 0"),
        ("heads", 3, r"model.model_dim: 128 is not divisible by model.heads \(3\)"),
    ],
)
def test_bad_model_keys_are_one_line(key, value, message):
    from attnkit.config import from_dict

    with pytest.raises(ConfigError, match=message):
        from_dict(LASConfig, {"kind": "transformer", key: value}, "model")
