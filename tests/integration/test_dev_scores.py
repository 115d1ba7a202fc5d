"""The dev scores the trainer logs are the scores of the weights it saves.

Every evaluation during training is repeated on a copy of the same weights saved to disk and loaded
again: the hypotheses (and so every metric, early stopping and the choice of ``best``) must be
identical. A decoding cache that outlived an optimizer step (fused Adam updates the weights in place
without bumping their version counters) once made these differ.
"""

import pytest
import torch
from test_trainer_checkpoints import _config, _digits, _write_tsvs

from attnkit.families.seq2seq.evaluate import evaluate_translator
from attnkit.families.seq2seq.trainer import Trainer
from attnkit.families.seq2seq.translator import Translator

pytestmark = pytest.mark.slow

# (attention, decoder, input_feeding, rnn, decoder_layers): every decoder path the trainer can take
PATHS = [
    ("bahdanau", "bahdanau", True, "gru", 1),  # Bahdanau-style handwritten-backward loop
    ("luong-concat", "bahdanau", True, "lstm", 1),
    ("luong-dot", "luong", True, "gru", 1),  # input-fed Luong loop, dot-product scores
    ("luong-general", "luong", False, "gru", 1),  # no input feeding: one RNN call over the target
    ("luong-concat", "luong", True, "lstm", 1),
    ("scaled-dot", "luong", True, "gru", 1),
    ("multihead", "luong", True, "gru", 1),  # autograd step loop
    ("bahdanau", "luong", True, "gru", 2),  # stacked layers: autograd step loop
]


@pytest.mark.parametrize("attention,decoder,feeding,rnn,layers", PATHS)
def test_logged_dev_scores_equal_the_saved_weights_scores(
    tmp_path, attention, decoder, feeding, rnn, layers
):
    data = _write_tsvs(tmp_path, _digits, sizes=(120, 24, 4))
    cfg = _config(tmp_path, data, {"epochs": 2, "eval_every": 4, "lr": 0.02, "batch_size": 16})
    cfg.model.attention, cfg.model.decoder, cfg.model.input_feeding = attention, decoder, feeding
    cfg.model.rnn, cfg.model.decoder_layers = rnn, layers
    checked = []

    def evaluate_and_compare(translator, family, pairs, **kwargs):
        metrics, sources, refs, translations = evaluate_translator(
            translator, family, pairs, **kwargs
        )
        saved = translator.save(tmp_path / f"copy-{len(checked)}")
        reloaded = Translator.load(saved, torch.device("cpu"))
        again, _, _, again_translations = evaluate_translator(reloaded, family, pairs, **kwargs)
        assert [t.output for t in translations] == [t.output for t in again_translations]
        assert metrics == again
        checked.append(metrics)
        return metrics, sources, refs, translations

    Trainer(cfg, log_fn=lambda m: None, dev_scorer=evaluate_and_compare).train()
    assert len(checked) >= 3  # several evaluations, each after more updates than the last
