"""A seq2seq checkpoint's bundle: the model with its experiment config and the vocabularies and
tokenizers that turn text into its ids and back (:class:`Seq2SeqBundle`), written and read as one
directory.

Files beside the common ones (:mod:`attnkit.checkpoint`): ``src_vocab.json``,
``tgt_vocab.json``, ``tokenizers.json`` (each side's tokenizer settings) and, for sentencepiece
sides, their model files. :func:`read_seq2seq` checks every file and builds nothing;
:func:`load_seq2seq` also builds the model from the config and loads its weights. The trainer
holds a bundle (and saves it); :class:`attnkit.families.seq2seq.translator.Translator` decodes
with one.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import torch

from attnkit.checkpoint import read_config, read_json, read_meta, write_checkpoint
from attnkit.checkpoint.validate import build_checked
from attnkit.data.copy_ids import same_vocab
from attnkit.data.tokenizers import Tokenizer, tokenizer_from_json
from attnkit.data.vocab import Vocab
from attnkit.errors import AttnkitError, CheckpointError
from attnkit.families.seq2seq.config import (
    ExperimentConfig,
    experiment_from_dict,
    experiment_to_dict,
)
from attnkit.models.architectures import build_model

FAMILY = "seq2seq"


@dataclass
class TextSides:
    """How a seq2seq model reads and writes text: each side's tokenizer and vocabulary."""

    src_tokenizer: Tokenizer
    tgt_tokenizer: Tokenizer
    src_vocab: Vocab
    tgt_vocab: Vocab


@dataclass
class Seq2SeqBundle:
    """What a seq2seq checkpoint holds, in memory: the model (an RNN encoder-decoder or a
    Transformer), the experiment config it was built from (with the run's train and decode
    settings) and its text sides."""

    model: torch.nn.Module
    config: ExperimentConfig
    sides: TextSides

    def save(
        self,
        directory: str | Path,
        trainer_state: dict | None = None,
        trainer_tensors: dict[str, torch.Tensor] | None = None,
    ) -> Path:
        """Write the bundle as a checkpoint directory, atomically (:func:`write_seq2seq`)."""
        return write_seq2seq(
            directory,
            self.model.state_dict(),
            experiment_to_dict(self.config),
            self.sides,
            trainer_state,
            trainer_tensors,
        )


def load_seq2seq(directory: str | Path, device: torch.device) -> Seq2SeqBundle:
    """A seq2seq checkpoint as a bundle: its files checked (:func:`read_seq2seq`), its model
    built from the saved config, given the saved weights, on ``device`` in eval mode."""
    directory = Path(directory)
    saved, sides = read_seq2seq(directory)
    try:
        config = experiment_from_dict(saved, source=str(directory / "config.yaml"))
    except AttnkitError as exc:
        raise CheckpointError(str(exc)) from None
    if getattr(config.model, "copy", False) and not same_vocab(sides.src_vocab, sides.tgt_vocab):
        raise CheckpointError(
            f"{directory / 'src_vocab.json'}: a copying model (model.copy) reads and writes one "
            "vocabulary, but src_vocab.json and tgt_vocab.json differ"
        )
    model = build_checked(  # the file's shapes checked before any memory is allocated
        directory, lambda: build_model(config.model, len(sides.src_vocab), len(sides.tgt_vocab))
    )
    return Seq2SeqBundle(model.to(device).eval(), config, sides)


def write_seq2seq(
    directory: str | Path,
    state_dict: dict[str, torch.Tensor],
    config: dict,
    sides: TextSides,
    trainer_state: dict | None = None,
    trainer_tensors: dict[str, torch.Tensor] | None = None,
) -> Path:
    """One seq2seq checkpoint, written atomically (:func:`attnkit.checkpoint.write_checkpoint`):
    the tensors, the resolved ``config``, the text ``sides`` and, for ``last``, the trainer's."""

    def extra(tmp: Path) -> None:
        sides.src_vocab.save(tmp / "src_vocab.json")
        sides.tgt_vocab.save(tmp / "tgt_vocab.json")
        tokenizers = {
            "source": sides.src_tokenizer.to_json(),
            "target": sides.tgt_tokenizer.to_json(),
        }
        for tok in (sides.src_tokenizer, sides.tgt_tokenizer):
            if hasattr(tok, "copy_to"):
                tok.copy_to(tmp)
        (tmp / "tokenizers.json").write_text(json.dumps(tokenizers, indent=1), encoding="utf-8")

    return write_checkpoint(
        directory, FAMILY, state_dict, config, trainer_state, trainer_tensors, extra
    )


def read_seq2seq(directory: str | Path) -> tuple[dict, TextSides]:
    """(the config as saved, the text sides) of a seq2seq checkpoint; CheckpointError naming the
    file for anything missing, foreign or malformed."""
    directory = Path(directory)
    read_meta(directory, FAMILY)
    config = read_config(directory)
    src_vocab = Vocab.load(_need(directory / "src_vocab.json"))
    tgt_vocab = Vocab.load(_need(directory / "tgt_vocab.json"))
    tokenizers = read_json(directory / "tokenizers.json")
    if not isinstance(tokenizers, dict) or not {"source", "target"} <= set(tokenizers):
        raise CheckpointError(
            f"{directory / 'tokenizers.json'}: expected 'source' and 'target' tokenizers"
        )
    src_tok = tokenizer_from_json(tokenizers["source"], directory)
    tgt_tok = tokenizer_from_json(tokenizers["target"], directory)
    return config, TextSides(src_tok, tgt_tok, src_vocab, tgt_vocab)


def _need(path: Path) -> Path:
    if not path.is_file():
        raise CheckpointError(f"{path}: missing from the checkpoint")
    return path
