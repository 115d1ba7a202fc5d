"""Several seq2seq checkpoints that decode as one model: ``attnkit.load([dir1, dir2])``,
``attnkit translate --model A --model B``.

At every step each member advances its own state and the ensemble emits from the mean of their
output probabilities; the attention shown is the mean of their weights
(:class:`attnkit.decoding.ensemble.Ensemble`). The members may differ in size, cell and
attention, but they must read and write text alike: the same task, vocabularies and tokenizers,
checked here before the first one decodes.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import torch

from attnkit.data.tokenizers import Tokenizer
from attnkit.decoding.ensemble import Ensemble
from attnkit.device import resolve_device
from attnkit.errors import AttnkitError, CheckpointError
from attnkit.families.seq2seq.translator import Translator


def load_translator(
    directories: Sequence[str | Path], device: str | torch.device = "auto"
) -> Translator:
    """One checkpoint directory (the model itself), or several that decode as an ensemble."""
    if len(directories) == 1:
        return Translator.load(directories[0], device)
    return load_ensemble(directories, device)


def load_ensemble(
    directories: Sequence[str | Path], device: str | torch.device = "auto"
) -> Translator:
    """The checkpoints in ``directories`` as one translator whose model is their
    :class:`~attnkit.decoding.ensemble.Ensemble`; the first one's data and decode settings
    apply. One directory loads a one-member ensemble, which decodes exactly as the model alone.
    A member whose task, vocabularies or tokenizers differ from the first's is a
    :class:`CheckpointError` naming it and what differs."""
    if not directories:
        raise AttnkitError("an ensemble needs at least one checkpoint directory")
    device = device if isinstance(device, torch.device) else resolve_device(device)
    first, *rest = [Translator.load(d, device) for d in directories]
    for directory, other in zip(directories[1:], rest):
        what = _difference(first, other)
        if what is not None:
            raise CheckpointError(
                f"{directory}: its {what} differs from that of {directories[0]}, so the two "
                "cannot decode as an ensemble"
            )
    model = Ensemble([first.model] + [t.model for t in rest]).eval()
    return Translator(model, first.config, *_sides(first), device)


def _difference(first: Translator, other: Translator) -> str | None:
    """What of ``other`` would make it read or write text unlike ``first``, or None."""
    for what, mine, theirs in (
        ("task", first.config.data.task, other.config.data.task),
        ("source vocabulary", first.src_vocab.itos, other.src_vocab.itos),
        ("target vocabulary", first.tgt_vocab.itos, other.tgt_vocab.itos),
        ("source tokenizer", _identity(first.src_tokenizer), _identity(other.src_tokenizer)),
        ("target tokenizer", _identity(first.tgt_tokenizer), _identity(other.tgt_tokenizer)),
    ):
        if mine != theirs:
            return what
    return None


def _sides(translator: Translator) -> tuple:
    """The tokenizers and vocabularies, in the order :class:`Translator` takes them."""
    t = translator
    return t.src_tokenizer, t.tgt_tokenizer, t.src_vocab, t.tgt_vocab


def _identity(tokenizer: Tokenizer) -> tuple:
    """What decides how a tokenizer splits text: its settings and any model file's bytes."""
    return tokenizer.to_json(), getattr(tokenizer, "model_proto", None)
