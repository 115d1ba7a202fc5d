"""The decoding shortcuts compute what the plain path computes."""

import torch

from attnkit.decoding import beam_search, greedy_decode
from attnkit.models.seq2seq import Seq2Seq, Seq2SeqConfig


def _model(rnn: str = "gru") -> Seq2Seq:
    torch.manual_seed(0)
    cfg = Seq2SeqConfig(attention="bahdanau", decoder="luong", rnn=rnn, embedding_dim=8, encoder_hidden=8,
                        decoder_hidden=16, attention_dim=8, dropout=0.0)
    return Seq2Seq(cfg, 12, 10).eval()


def _source():
    src = torch.tensor([[5, 6, 7, 8, 3], [9, 4, 3, 0, 0], [6, 3, 0, 0, 0]])
    return src, (src != 0).sum(1)


def test_input_table_step_equals_projected_step():
    for rnn in ("gru", "lstm"):
        model = _model(rnn)
        src, lengths = _source()
        memory, state = model.encode(src, lengths)
        tokens = torch.tensor([2, 7, 9])
        with torch.inference_mode():  # uses the cached (V, G*H) table
            fast, _, fast_w = model.decoder.step(tokens, state, memory)
        with torch.no_grad(), torch.enable_grad():  # grad mode on: the plain projection
            plain, _, plain_w = model.decoder.step(tokens, state, memory)
        torch.testing.assert_close(fast, plain)
        torch.testing.assert_close(fast_w, plain_w)


def test_input_table_follows_weight_updates():
    model = _model()
    with torch.inference_mode():
        before = model.decoder._input_table().clone()
    with torch.no_grad():
        model.decoder.rnn.weight_ih_l0.add_(1.0)  # as an optimizer step would, in place
    with torch.inference_mode():
        after = model.decoder._input_table()
    assert not torch.allclose(before, after)
    torch.testing.assert_close(after, model.decoder._project_inputs(model.decoder.embed.weight).detach())


def test_greedy_drops_finished_rows_without_changing_results():
    model = _model()
    src, lengths = _source()
    greedy = greedy_decode(model, src, lengths, max_len=9)
    beam1 = beam_search(model, src, lengths, max_len=9, beam_size=1)
    for g, (b,) in zip(greedy, beam1):
        assert g.tokens == b.tokens
        assert g.finished == b.finished
        torch.testing.assert_close(g.weights, b.weights)
        assert abs(g.score - b.score) < 1e-4
