"""What a Hugging Face model is, as attnkit uses it: a :class:`Kind` (a sequence or image
classifier, an encoder, a causal language model, an encoder-decoder) chosen from the architecture
its ``config.json`` names, and :func:`open_model`, which loads it with SDPA attention.

Shapes: L layers, H heads, T queries, S keys.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import torch
from safetensors import SafetensorError

from attnkit.errors import CheckpointError
from attnkit.families.hf.loading import Source, quiet_progress, require_transformers
from attnkit.families.hf.shapes import check_shapes
from attnkit.size_caps import cap_of


@dataclass(frozen=True)
class Kind:
    """One kind of model: ``name``; ``task``, the method that answers it (``classify``,
    ``encode``, ``generate``, ``translate``); ``words``, the kind in a message; ``suffixes``, the
    ends of the architecture names of the kind; ``encoder_decoder``, what the config's
    ``is_encoder_decoder`` must say."""

    name: str
    task: str
    words: str
    suffixes: tuple[str, ...]
    encoder_decoder: bool = False

    def fits(self, architecture: str, config) -> bool:
        is_pair = bool(getattr(config, "is_encoder_decoder", False))
        return architecture.endswith(self.suffixes) and is_pair == self.encoder_decoder


#: every kind, the first that fits an architecture taken
KINDS = (
    Kind("image-classifier", "classify", "an image classifier", ("ForImageClassification",)),
    Kind("classifier", "classify", "a sequence classifier", ("ForSequenceClassification",)),
    Kind("causal-lm", "generate", "a causal language model", ("ForCausalLM", "LMHeadModel")),
    Kind(
        "seq2seq",
        "translate",
        "an encoder-decoder",
        ("ForConditionalGeneration", "MTModel", "ForSeq2SeqLM"),
        encoder_decoder=True,
    ),
    Kind("encoder", "encode", "an encoder", ("Model", "ForMaskedLM", "ForPreTraining")),
)
DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


def kind_of(architecture: str, config, label: str) -> Kind:
    """The kind of ``architecture``, or a one-line error listing what attnkit loads."""
    for kind in KINDS:
        if kind.fits(architecture, config):
            return kind
    if getattr(config, "is_encoder_decoder", False):
        raise CheckpointError(
            f"{label}: {architecture} is an encoder-decoder without a language-model head: "
            "attnkit loads *ForConditionalGeneration / *MTModel ones, which translate"
        )
    listed = ", ".join("*" + s for kind in KINDS for s in kind.suffixes)
    raise CheckpointError(f"{label}: {architecture}: attnkit loads the architectures {listed}")


def _config(t, source: Source):
    try:
        config = t.AutoConfig.from_pretrained(source.where, **source.options())
    except (OSError, ValueError, KeyError) as exc:
        raise CheckpointError(f"{source.label}: its config.json: {_first_line(exc)}") from None
    _check_sizes(config.to_dict(), f"{source.label}: its config.json")
    return config


#: a config.json's integers that are sizes (the rest, ids and flags, are not) and their caps:
#: layers and heads as attnkit's own checkpoints (attnkit.size_caps); a vocabulary or a position
#: table far above any published model's; any other width attnkit's width cap
_SIZE_KEY = re.compile(r"(size|layers|heads|_dim|^d_[a-z]+|^n_[a-z]+|embeddings|positions)$")
_LARGE = re.compile(r"^(vocab_size|max_position_embeddings|n_positions|n_ctx)$")
LARGE_CAP = 1 << 20


def _check_sizes(config: dict, where: str, depth: int = 0) -> None:
    """CheckpointError naming the first size of ``config`` (nested configs too) above its cap:
    checked before a model is built, so a crafted config allocates nothing."""
    for key, value in config.items():
        if isinstance(value, dict) and depth < 2:
            _check_sizes(value, f"{where}: {key}", depth + 1)
        if isinstance(value, bool) or not isinstance(value, int) or not _SIZE_KEY.search(key):
            continue
        cap = LARGE_CAP if _LARGE.match(key) else cap_of(key)
        if value > cap:
            raise CheckpointError(f"{where}: {key} {value:,} is above the cap of {cap:,}")


def _architecture(t, config, label: str) -> tuple[str, type]:
    """The model class the config names (its first ``architectures`` entry, else the base model
    of its ``model_type``), a class of transformers itself."""
    names = getattr(config, "architectures", None) or []
    if names:
        name = names[0]
    else:
        from transformers.models.auto.modeling_auto import MODEL_MAPPING_NAMES

        name = MODEL_MAPPING_NAMES.get(config.model_type, "")
    cls = getattr(t, name, None) if name else None
    if cls is None:
        raise CheckpointError(
            f"{label}: its architecture {name or '(none named)'} is not a class of transformers "
            f"{t.__version__}; attnkit runs no code from a hub (trust_remote_code stays off)"
        )
    return name, cls


def _weights(cls, source: Source, dtype: torch.dtype):
    try:
        return cls.from_pretrained(
            source.where, attn_implementation="sdpa", dtype=dtype, **source.options()
        )
    except (
        OSError,
        ValueError,
        ImportError,
        RuntimeError,
        AssertionError,
        TypeError,
        SafetensorError,
    ) as exc:
        # a config that does not fit the weights (transformers' size report, torch's overflow),
        # a weights file whose header declares what it cannot hold
        text = _first_line(exc)
        if "sdpa" in text.lower() or "scaled_dot_product" in text:
            raise CheckpointError(
                f"{source.label}: {cls.__name__} has no SDPA attention in this transformers, and "
                "attnkit captures attention from SDPA calls"
            ) from None
        raise CheckpointError(f"{source.label}: loading its weights: {text}") from None


#: the files a tokenizer is read from (one at least), and an image processor's
TOKENIZER_FILES = (
    "tokenizer.json",
    "tokenizer_config.json",
    "vocab.txt",
    "vocab.json",
    "spiece.model",
    "sentencepiece.bpe.model",
    "source.spm",
    "tokenizer.model",
)
IMAGE_FILES = ("preprocessor_config.json", "processor_config.json")


def _processor(t, source: Source, model) -> Any:
    """The tokenizer (text models) or image processor (``pixel_values`` models) saved with the
    model (transformers would make a tokenizer of special tokens alone without its files)."""
    image = model.main_input_name == "pixel_values"
    loader, files, what = (
        (t.AutoImageProcessor, IMAGE_FILES, "image processor (preprocessor_config.json)")
        if image
        else (t.AutoTokenizer, TOKENIZER_FILES, "tokenizer (tokenizer.json, tokenizer_config.json)")
    )
    why = "none in its directory"
    if source.has_any(files):
        try:
            return loader.from_pretrained(source.where, **source.options())
        except (OSError, ValueError, KeyError, TypeError, ImportError) as exc:
            why = _first_line(exc)
    raise CheckpointError(
        f"{source.label}: no {what} found with the model ({why}); save it beside the model "
        "with its save_pretrained(DIR)"
    )


def open_model(source: Source, device: torch.device, dtype: str | torch.dtype = "float32"):
    """(model in eval mode on ``device``, its tokenizer or image processor, its :class:`Kind`)
    for ``source``, with ``attn_implementation="sdpa"``; every failure one line."""
    t = require_transformers()
    if isinstance(dtype, str):
        if dtype not in DTYPES:
            raise CheckpointError(f"dtype: {dtype!r}; choose one of {', '.join(DTYPES)}")
        dtype = DTYPES[dtype]
    with quiet_progress():
        config = _config(t, source)
        name, cls = _architecture(t, config, source.label)
        kind = kind_of(name, config, source.label)
        check_shapes(cls, config, source.files, source.label)  # before the model is allocated
        model = _weights(cls, source, dtype)
        processor = _processor(t, source, model)
    implementation = getattr(model.config, "_attn_implementation", None)
    if implementation != "sdpa":  # pragma: no cover - transformers falls back only when told to
        raise CheckpointError(f"{source.label}: it runs {implementation!r} attention, not sdpa")
    return model.to(device).eval(), processor, kind


def _first_line(exc: BaseException) -> str:
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    return lines[0] if lines else type(exc).__name__
