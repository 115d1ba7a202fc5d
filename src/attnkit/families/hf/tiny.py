"""Tiny Hugging Face models with their tokenizers, built from configs with random weights and saved
with ``save_pretrained``: nothing is downloaded. The tests, docs/API.md's example and the lessons
load them with ``attnkit.load("hf:DIR")`` as they would a real model.

``save_tiny(kind, directory)`` writes one of :data:`KINDS`: a BERT sentence classifier, a BERT
encoder, GPT-2, a Llama with grouped-query attention (4 query heads sharing 2 key/value heads),
a Marian translator, T5 and a ViT image classifier. The text models' tokenizers are trained on
:data:`SENTENCES` with a small vocabulary, so that rarer words split into several subwords
(WordPiece ``##`` for BERT, SentencePiece-style ``▁`` for the others).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import torch

from attnkit.families.hf.loading import require_transformers

#: what the tokenizers are trained on
SENTENCES = (
    "the cat sat on the mat",
    "a dog barked at the cat",
    "attention is all you need",
    "the model looked at every word of the sentence",
    "translation models attend to the source while they write",
    "she went back to the kitchen",
    "an encoder reads the whole input at once",
    "a decoder writes one token after another",
)
#: the sentence classifier's and the image classifier's labels
TEXT_LABELS = ("negative", "positive")
IMAGE_LABELS = ("cat", "dog", "bird")
WIDTH = {"hidden_size": 32, "num_attention_heads": 4, "intermediate_size": 37}


def _tokenizer(kind: str, vocab_size: int = 90):
    """A fast tokenizer trained on :data:`SENTENCES`: WordPiece with [CLS] ... [SEP] (``bert``),
    or BPE over ``▁``-marked words with <s> first (``llama``), </s> last (``marian``, ``t5``) or
    neither (``gpt2``)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers

    transformers = require_transformers()
    if kind == "bert":
        specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
        tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
        tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
        tok.decoder = decoders.WordPiece()
        trainer = trainers.WordPieceTrainer(
            vocab_size=vocab_size, special_tokens=specials, show_progress=False
        )
    else:
        specials = ["<pad>", "<unk>", "<s>", "</s>"]
        tok = Tokenizer(models.BPE(unk_token="<unk>"))
        tok.pre_tokenizer = pre_tokenizers.Metaspace()
        tok.decoder = decoders.Metaspace()
        trainer = trainers.BpeTrainer(
            vocab_size=vocab_size, special_tokens=specials, show_progress=False
        )
    tok.train_from_iterator(SENTENCES, trainer)
    single = {"bert": "[CLS] $A [SEP]", "llama": "<s> $A", "marian": "$A </s>", "t5": "$A </s>"}
    if kind in single:
        used = [t for t in specials if t in single[kind]]
        tok.post_processor = processors.TemplateProcessing(
            single=single[kind], special_tokens=[(t, tok.token_to_id(t)) for t in used]
        )
    names = ("pad", "unk", "cls", "sep", "mask") if kind == "bert" else ("pad", "unk", "bos", "eos")
    return transformers.PreTrainedTokenizerFast(
        tokenizer_object=tok, **{f"{n}_token": t for n, t in zip(names, specials)}
    )


def _ids(tokenizer) -> dict:
    """The special token ids a config of a model using ``tokenizer`` names."""
    return {
        "vocab_size": len(tokenizer),
        "pad_token_id": tokenizer.pad_token_id,
        "bos_token_id": tokenizer.bos_token_id,
        "eos_token_id": tokenizer.eos_token_id,
    }


def _labels(names) -> dict:
    return {"id2label": dict(enumerate(names)), "label2id": {n: i for i, n in enumerate(names)}}


def _bert(encoder_only: bool):
    t = require_transformers()
    tokenizer = _tokenizer("bert")
    ids = {"vocab_size": len(tokenizer), "pad_token_id": tokenizer.pad_token_id}
    config = t.BertConfig(**ids, **WIDTH, num_hidden_layers=2, max_position_embeddings=24)
    if encoder_only:
        return t.BertModel(config), tokenizer
    config.update(_labels(TEXT_LABELS))
    return t.BertForSequenceClassification(config), tokenizer


def _gpt2():
    t = require_transformers()
    tokenizer = _tokenizer("gpt2")
    config = t.GPT2Config(**_ids(tokenizer), n_embd=32, n_layer=2, n_head=4, n_positions=32)
    return t.GPT2LMHeadModel(config), tokenizer


def _llama():
    t = require_transformers()
    tokenizer = _tokenizer("llama")
    config = t.LlamaConfig(
        **_ids(tokenizer),
        **WIDTH,
        num_hidden_layers=2,
        num_key_value_heads=2,
        max_position_embeddings=32,
    )
    return t.LlamaForCausalLM(config), tokenizer


def _marian():
    t = require_transformers()
    tokenizer = _tokenizer("marian")
    config = t.MarianConfig(
        **_ids(tokenizer),
        decoder_start_token_id=tokenizer.pad_token_id,
        forced_eos_token_id=tokenizer.eos_token_id,
        d_model=32,
        encoder_layers=2,
        decoder_layers=2,
        encoder_attention_heads=4,
        decoder_attention_heads=4,
        encoder_ffn_dim=37,
        decoder_ffn_dim=37,
        max_position_embeddings=32,
    )
    return t.MarianMTModel(config), tokenizer


def _t5():
    t = require_transformers()
    tokenizer = _tokenizer("t5")
    ids = _ids(tokenizer)
    ids.pop("bos_token_id")
    config = t.T5Config(
        **ids,
        decoder_start_token_id=tokenizer.pad_token_id,
        d_model=32,
        d_kv=8,
        d_ff=37,
        num_layers=2,
        num_decoder_layers=2,
        num_heads=4,
    )
    return t.T5ForConditionalGeneration(config), tokenizer


def _vit():
    t = require_transformers()
    config = t.ViTConfig(
        **WIDTH, image_size=16, patch_size=4, num_hidden_layers=2, **_labels(IMAGE_LABELS)
    )
    # the PIL backend where transformers has it (the default one wants torchvision)
    processor = getattr(t, "ViTImageProcessorPil", t.ViTImageProcessor)(
        size={"height": 16, "width": 16}
    )
    return t.ViTForImageClassification(config), processor


#: the kinds that generate text
GENERATORS = ("gpt2", "llama", "marian", "t5")
#: kind -> () -> (model, its tokenizer or image processor)
KINDS: dict[str, Callable[[], tuple]] = {
    "bert": lambda: _bert(encoder_only=False),
    "bert-encoder": lambda: _bert(encoder_only=True),
    "gpt2": _gpt2,
    "llama": _llama,
    "marian": _marian,
    "t5": _t5,
    "vit": _vit,
}


def save_tiny(kind: str, directory: str | Path, seed: int = 0) -> Path:
    """Build the tiny model ``kind`` (:data:`KINDS`) with random weights drawn from ``seed`` and
    save it, with its tokenizer or image processor, into ``directory``; returns the directory."""
    if kind not in KINDS:
        raise ValueError(f"kind: {kind!r}; choose one of {', '.join(KINDS)}")
    from attnkit.families.hf.loading import quiet_progress

    torch.manual_seed(seed)
    model, processor = KINDS[kind]()
    if kind in GENERATORS:
        model.generation_config.max_new_tokens = 16  # what a real model's generation config says
    directory = Path(directory)
    with quiet_progress():
        model.eval().save_pretrained(directory)
        processor.save_pretrained(directory)
    return directory
