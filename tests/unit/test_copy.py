"""The copy switch (pointer-generator): the mixture is a distribution that puts the attention on
the source's words, p_gen is in [0, 1], extended ids map back to the source's words, stepping
equals teacher forcing, decoding carries p_gen, and configs and checkpoints are checked. The
copyrare task and its slot score. That copying beats not copying:
tests/integration/test_copy_learning.py."""

import numpy as np
import pytest
import torch

from attnkit.data.batching import encode_pairs
from attnkit.data.copy_ids import decode_extended, encode_extended, joint_vocab, source_oovs
from attnkit.data.tasks import copyrare
from attnkit.data.tokenizers import WhitespaceTokenizer
from attnkit.data.vocab import BOS_ID, EOS_ID, PAD_ID, UNK_ID, Vocab
from attnkit.decoding import beam_search, forced_decode, greedy_decode
from attnkit.errors import ConfigError
from attnkit.models.copy import mixture
from attnkit.models.seq2seq import Seq2Seq, Seq2SeqConfig
from attnkit.viz.records import AttentionRecord

V = 12


def _model(attention="bahdanau", decoder="auto", seed=0):
    torch.manual_seed(seed)
    cfg = Seq2SeqConfig(
        attention=attention,
        decoder=decoder,
        copy=True,
        embedding_dim=8,
        encoder_hidden=8,
        decoder_hidden=16,
        attention_dim=12,
        dropout=0.0,
    )
    return Seq2Seq(cfg, V, V).eval()


def _src():
    """Two sources with extended ids: row 0 holds unknown words V and V+1 (V twice), row 1 none."""
    src = torch.tensor([[4, V, 5, V + 1, V, EOS_ID], [6, 7, EOS_ID, PAD_ID, PAD_ID, PAD_ID]])
    return src, torch.tensor([6, 3])


def test_mixture_is_a_distribution_that_copies_by_attention():
    g = torch.Generator().manual_seed(0)
    p_vocab = torch.softmax(torch.randn(3, V, generator=g), -1)
    weights = torch.softmax(torch.randn(3, 4, generator=g), -1)
    ids = torch.tensor([[5, V, V, V + 1], [5, 6, 7, 8], [V, V, V, V]])
    p_gen = torch.tensor([0.3, 1.0, 0.0])
    p = mixture(p_vocab, weights, p_gen, ids, V + 2)
    assert p.shape == (3, V + 2)
    torch.testing.assert_close(p.sum(-1), torch.ones(3))
    # row 0: word V gets 1 - p_gen times the attention on both its positions
    torch.testing.assert_close(p[0, V], 0.7 * (weights[0, 1] + weights[0, 2]))
    torch.testing.assert_close(p[0, 5], 0.3 * p_vocab[0, 5] + 0.7 * weights[0, 0])
    torch.testing.assert_close(p[1, :V], p_vocab[1])  # p_gen 1: writing only
    assert float(p[2, V]) == pytest.approx(1.0)  # p_gen 0: copying only, one word at 4 places
    # weights that do not sum to 1 (local-p) are renormalised
    torch.testing.assert_close(mixture(p_vocab, weights * 0.5, p_gen, ids, V + 2), p)


@pytest.mark.parametrize(
    "attention,decoder", [("bahdanau", "auto"), ("luong-general", "luong"), ("local-p", "luong")]
)
def test_teacher_forcing_gives_log_probabilities_over_the_extended_vocabulary(attention, decoder):
    model = _model(attention, decoder)
    src, lengths = _src()
    tgt_in = torch.tensor([[BOS_ID, V + 1, 4, V], [BOS_ID, 6, 7, 8]])
    with torch.no_grad():
        logp, weights = model(src, lengths, tgt_in)
    assert logp.shape == (2, 4, V + 2) and weights.shape == (2, 4, 6)
    torch.testing.assert_close(logp.exp().sum(-1), torch.ones(2, 4))
    # row 1 holds no unknown word: the extended ids have (almost) no probability
    assert float(logp[1, :, V:].exp().max()) < 1e-20
    # stepping gives the same distributions, each step's p_gen in [0, 1] on the state
    memory, state = model.encode(src, lengths)
    for t in range(tgt_in.size(1)):
        step_logp, state, _ = model.decoder.step(tgt_in[:, t], state, memory)
        torch.testing.assert_close(step_logp, logp[:, t], atol=1e-5, rtol=1e-5)
        assert state.p_gen.shape == (2,) and bool(((state.p_gen >= 0) & (state.p_gen <= 1)).all())


def test_an_extended_id_is_read_as_unk_but_copied_by_position():
    model = _model()
    src, lengths = _src()
    unk = src.masked_fill(src >= V, UNK_ID)
    memory, _ = model.encode(src, lengths)
    memory_unk, _ = model.encode(unk, lengths)
    torch.testing.assert_close(memory.states, memory_unk.states)  # the encoder sees <unk>
    assert memory.extended == V + 2 and torch.equal(memory.copy_ids, src)


def test_decoding_keeps_p_gen_for_every_step():
    model = _model()
    src, lengths = _src()
    for hyp in greedy_decode(model, src, lengths, 6):
        assert hyp.p_gen is not None and hyp.p_gen.shape == (hyp.weights.size(0),)
        assert bool(((hyp.p_gen >= 0) & (hyp.p_gen <= 1)).all())
    greedy = greedy_decode(model, src, lengths, 6)
    beams = beam_search(model, src, lengths, 6, beam_size=1)
    for g, (b,) in zip(greedy, beams):  # beam 1 is greedy, p_gen included
        assert g.tokens == b.tokens
        torch.testing.assert_close(g.p_gen, b.p_gen)
    for hyp in beam_search(model, src, lengths, 6, beam_size=3, n_best=2)[0]:
        assert hyp.p_gen.shape == (hyp.weights.size(0),)
    forced = forced_decode(model, src, lengths, [[V + 1, 4], [6]])
    assert [h.p_gen.shape for h in forced] == [(3,), (2,)]


def test_extended_ids_map_back_to_the_source_words():
    vocab = Vocab.build([["pay", "call", "ann"]])
    tokens = ["pay", "zorro", "42", "zorro", "ann"]
    oovs = source_oovs(tokens, vocab)
    assert oovs == ["zorro", "42"]
    ids = encode_extended(tokens, vocab, oovs)
    n = len(vocab)
    assert ids == [vocab.stoi["pay"], n, n + 1, n, vocab.stoi["ann"]]
    assert decode_extended(ids + [n + 5], vocab, oovs) == tokens + ["<unk>"]
    # a target word the source does not hold stays <unk>
    assert encode_extended(["pay", "42", "bob"], vocab, oovs) == [vocab.stoi["pay"], n + 1, UNK_ID]


def test_training_pairs_of_a_copying_model_share_the_unknown_words_ids():
    tok = WhitespaceTokenizer(False)
    vocab = joint_vocab([["send", "to"]], [["pay"]])
    pairs = [("send 907 to tukela", "pay tukela 907"), ("send 5 to x", "pay y 5")]
    plain = encode_pairs(pairs, tok, tok, vocab, vocab)
    copied = encode_pairs(pairs, tok, tok, vocab, vocab, copy=True)
    n = len(vocab)
    assert plain[0].tgt == [vocab.stoi["pay"], UNK_ID, UNK_ID]
    assert copied[0].src == [vocab.stoi["send"], n, vocab.stoi["to"], n + 1, EOS_ID]
    assert copied[0].tgt == [vocab.stoi["pay"], n + 1, n]
    assert copied[1].tgt == [vocab.stoi["pay"], UNK_ID, n]  # y is not in the source
    # a word truncation cuts from the source cannot be copied
    with pytest.warns(UserWarning, match="truncated"):
        cut = encode_pairs(pairs[:1], tok, tok, vocab, vocab, max_src_len=3, copy=True)
    assert cut[0].tgt == [vocab.stoi["pay"], UNK_ID, n]


def test_copy_needs_attention_and_one_vocabulary():
    with pytest.raises(ConfigError, match="copy"):
        Seq2SeqConfig(attention="none", copy=True).validate("model")
    with pytest.raises(ConfigError, match="one vocabulary"):
        Seq2Seq(Seq2SeqConfig(copy=True), V, V + 1)
    plain = Seq2Seq(Seq2SeqConfig(), V, V)
    assert not any(name.startswith("decoder.switch") for name in plain.state_dict())


def test_record_keeps_p_gen_and_checks_its_length(tmp_path):
    from attnkit.viz.records import load_records, save_records

    rec = AttentionRecord("a b", ["a", "b"], "b", ["b", "</s>"], np.eye(2), p_gen=[0.2, 0.9])
    for suffix in (".json", ".npz"):
        save_records([rec], tmp_path / f"r{suffix}")
        (back,) = load_records(tmp_path / f"r{suffix}")
        np.testing.assert_allclose(back.p_gen, [0.2, 0.9], atol=1e-6)
    with pytest.raises(ValueError, match="p_gen"):
        AttentionRecord("a b", ["a", "b"], "b", ["b", "</s>"], np.eye(2), p_gen=[0.2])


def test_plot_draws_p_gen_beside_the_map(tmp_path):
    from attnkit.viz.heatmap import plot_heatmap

    rec = AttentionRecord("a b", ["a", "b"], "b", ["b", "</s>"], np.eye(2), p_gen=[0.2, 0.9])
    fig = plot_heatmap(rec, path=tmp_path / "map.png")
    axes = [child for ax in fig.axes for child in (ax, *ax.child_axes)]
    labels = [t.get_text() for ax in axes for t in ax.get_xticklabels()]
    assert "p_gen" in labels and (tmp_path / "map.png").stat().st_size > 0


def test_copyrare_splits_hold_mostly_unseen_names_and_numbers():
    splits = copyrare.generate(seed=3, n_train=400, n_dev=20, n_test=50)
    assert splits.sizes() == {"train": 400, "dev": 20, "test": 50}
    assert copyrare.generate(seed=3, n_train=400, n_dev=20, n_test=50).test == splits.test
    assert not {s for s, _ in splits.train} & {s for s, _ in splits.test}
    assert copyrare.unseen_share(splits.train, splits.test) > 0.9
    source, target = splits.test[0]
    assert all(word in source.split() for _, word in copyrare.slots(target))


def test_slot_accuracy_counts_names_and_numbers_in_place():
    refs = ["pay tukela 907", "message ann bob"]
    assert copyrare.slot_accuracy(refs, refs) == 1.0
    assert copyrare.slot_accuracy(["pay <unk> 907", "message"], refs) == pytest.approx(1 / 4)


def _copying_translator(p_gen_logit: float):
    """A tiny untrained copying translator on copyrare's words whose switch is fixed near
    sigmoid(p_gen_logit)."""
    from attnkit.families.seq2seq.config import experiment_from_dict
    from attnkit.families.seq2seq.translator import Translator

    cfg = experiment_from_dict(
        {
            "data": {"task": "copyrare"},
            "model": {
                "copy": True,
                "embedding_dim": 8,
                "encoder_hidden": 8,
                "decoder_hidden": 16,
                "attention_dim": 8,
                "dropout": 0.0,
            },
            "decode": {"max_len_cap": 6},
        }
    )
    tok = WhitespaceTokenizer(False)
    vocab = joint_vocab([sorted(copyrare.TEMPLATE_WORDS)], [])
    torch.manual_seed(0)
    model = Seq2Seq(cfg.model, len(vocab), len(vocab)).eval()
    with torch.no_grad():
        model.decoder.switch.weight.zero_()
        model.decoder.switch.bias.fill_(p_gen_logit)
    return Translator(model, cfg, tok, tok, vocab, vocab, torch.device("cpu"))


def test_a_copying_translator_writes_unknown_words_back_and_keeps_p_gen():
    translator = _copying_translator(-30.0)  # p_gen ~ 0: every word is copied
    source = "zork owes blip 4711 dollars"
    with pytest.warns(UserWarning, match="may be copied"):
        results = translator.translate([source], beam_size=1) + translator.translate(
            [source], beam_size=3, prefix=["pay"]
        )
    for t in results:
        assert t.p_gen.shape == (len(t.output_tokens),) and float(t.p_gen[-1]) < 1e-6
        assert set(t.output_tokens) <= set(source.split()) | {"</s>", "pay"}
    assert results[1].output_tokens[0] == "pay"
    # forcing a reference: its unknown words are the source's, copied (not <unk>, which a model
    # that only copies never writes)
    (forced,) = translator.teacher_forced([source], ["zork 4711"])
    assert forced.output_tokens == ["zork", "4711", "</s>"] and forced.score > -20
    assert forced.p_gen.shape == (3,)


def test_the_explorer_sends_p_gen(tmp_path):
    from fastapi.testclient import TestClient

    from attnkit.serve.app import ServeSettings, create_app

    directory = tmp_path / "copier" / "best"
    _copying_translator(0.0).save(directory)
    with TestClient(create_app(ServeSettings(models=[directory]))) as client:
        response = client.post("/v1/translate", json={"inputs": ["pay zork 12"], "beam": 2})
        assert response.status_code == 200, response.text
        (hyp, *_) = response.json()["results"][0]["hypotheses"]
        assert len(hyp["p_gen"]) == len(hyp["tokens"])
        assert all(0 <= p <= 1 for p in hyp["p_gen"])


@pytest.mark.parametrize("backend", ["fused", "native"])
def test_every_cpu_backend_computes_the_reference_copy_distribution(backend):
    from attnkit.accel.backend import resolve

    model = _model("luong-general", "luong")
    src, lengths = _src()
    tgt_in = torch.tensor([[BOS_ID, V + 1, 4, V], [BOS_ID, 6, 7, 8]])
    with torch.no_grad():
        reference, _ = model(src, lengths, tgt_in)
        model.set_backend(resolve(backend, "cpu"))
        fast, _ = model(src, lengths, tgt_in)
        memory, state = model.encode(src, lengths)
        step_logp, _, _ = model.decoder.step(tgt_in[:, 0], state, memory)
    torch.testing.assert_close(fast, reference, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(step_logp, reference[:, 0], atol=1e-5, rtol=1e-5)


def test_a_copying_checkpoint_loads_and_one_with_two_vocabularies_is_refused(tmp_path):
    import json

    from attnkit.errors import CheckpointError
    from attnkit.families.seq2seq.bundle import load_seq2seq

    directory = tmp_path / "copier"
    _copying_translator(0.0).save(directory)
    bundle = load_seq2seq(directory, torch.device("cpu"))
    assert bundle.config.model.copy and "decoder.switch.weight" in bundle.model.state_dict()
    vocab = json.loads((directory / "tgt_vocab.json").read_text())
    vocab["tokens"][-1] = "changed"
    (directory / "tgt_vocab.json").write_text(json.dumps(vocab))
    with pytest.raises(CheckpointError, match="one vocabulary"):
        load_seq2seq(directory, torch.device("cpu"))
