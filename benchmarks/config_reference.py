"""Write the key tables of docs/CONFIG.md from the config dataclasses, so they cannot drift.

Every key of every section (seq2seq: the top level, ``data`` per task, ``model`` per ``arch``,
``train``, ``decode``; vision: ``data``, ``model`` per ``type``, ``train``; text: ``data``,
``model``, ``train``) becomes one row: its
type and default (read from the dataclass), what values it takes (the class's ``CHOICES``,
``RULES`` and ``APPLIES``, plus :data:`RANGES` for the checks that live in ``validate``) and what
it means: the comment on or above the field, or its attribute docstring, in the source (or
:data:`MEANINGS` for a field whose class says nothing). A field with no meaning at all is an
error: a key added to a dataclass fails until it is documented.

    python benchmarks/config_reference.py          # rewrite the generated part of docs/CONFIG.md
    python benchmarks/config_reference.py --check  # exit 1 when docs/CONFIG.md differs

Only the text between :data:`BEGIN` and :data:`END` is generated; the prose around it is written
by hand. ``tests/unit/test_config_reference.py`` runs the check.
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import importlib
import inspect
import io
import re
import sys
import textwrap
import tokenize
import types
import typing
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
CONFIG_MD = ROOT / "docs" / "CONFIG.md"
BEGIN = "<!-- begin: written by benchmarks/config_reference.py from the config classes -->"
END = "<!-- end: written by benchmarks/config_reference.py -->"

#: where the vision family's classes are found: the first (module, name) that imports wins, so
#: the script follows them when they move (add the new place at the front)
VISION_TRAIN_CONFIG = [
    ("attnkit.families.vision.config", "TrainConfig"),
    ("attnkit.vision.config", "TrainConfig"),
]
VISION_MODEL_TYPES = [
    ("attnkit.models.vision", "VISION_MODELS"),
    ("attnkit.families.vision.kinds", "MODEL_TYPES"),
    ("attnkit.vision.families", "MODEL_TYPES"),
]
VISION_DATA_CONFIG = [("attnkit.data.tasks.vision", "DataConfig")]
VISION_EXPERIMENT = [
    ("attnkit.families.vision.config", "VisionConfig"),
    ("attnkit.vision.config", "VisionConfig"),
]

#: meanings of fields whose class has no comment or docstring for them ("Class.field"; a comment
#: or docstring in the class, once written, takes precedence)
MEANINGS = {
    "ExperimentConfig.name": "the run's name: a plain directory name; runs go to runs/<name>",
    "ExperimentConfig.family": "seq2seq (vision experiments say `family: vision`)",
    "TaskData.task": "the task to learn; a person's file must name it",
    "TaskData.src_level": "how source text becomes tokens: char (characters), word (words with "
    "punctuation split off by sacremoses, output detokenized the same way), whitespace "
    "(pre-tokenized text: what spaces separate) or sentencepiece (subwords)",
    "TaskData.tgt_level": "how target text becomes tokens",
    "TaskData.lowercase": "lowercase source and target text before tokenizing",
    "TaskData.normalize": "the Unicode normal form text is brought to before tokenizing (NFC: an "
    "accented letter is one code point however it was typed); none keeps text as it comes. "
    "Checkpoints written before the key read text as it came",
    "TaskData.max_tgt_len": "tokens; longer targets follow `overlong`",
    "TaskData.overlong": "what happens to a pair longer than max_src_len / max_tgt_len",
    "NumbersData.languages": "the languages whose number words are generated",
    "NumbersData.direction": 'words2digits ("siebenundneunzig" -> 97) or the reverse',
    "NumbersData.max_number": "the largest number generated",
    "DatesData.train_size": "generated training pairs",
    "DatesData.dev_size": "generated dev pairs",
    "DatesData.test_size": "generated test pairs",
    "ParallelData.train": "the training split: a .tsv file (source TAB target) or "
    "[source_file, target_file]; relative paths are read from the experiment file's directory",
    "ParallelData.dev": "the dev split, as train",
    "ParallelData.test": "the test split, as train",
    "DownloadedData.directory": "the data set's directory; null: $ATTNKIT_DATA_DIR/<name>, "
    "else the per-user cache (docs/USAGE.md, Data)",
    "DownloadedData.download": "fetch missing files from their public home and check their "
    "sha256 (the shipped configs set it)",
    "Multi30kData.src_lang": "source language",
    "Multi30kData.tgt_lang": "target language (German <-> French is refused: not line-aligned)",
    "Seq2SeqConfig.embedding_dim": "width of the source and target token embeddings",
    "Seq2SeqConfig.encoder_layers": "stacked encoder RNN layers",
    "Seq2SeqConfig.bidirectional": "the encoder reads the source both ways",
    "Seq2SeqConfig.decoder_hidden": "width of the decoder RNN state",
    "Seq2SeqConfig.decoder_layers": "stacked decoder RNN layers",
    "Seq2SeqConfig.dropout": "dropout on embeddings and decoder outputs",
    "TransformerConfig.arch": "transformer",
    "TransformerConfig.encoder_layers": "encoder layers (self-attention + feed-forward)",
    "TransformerConfig.decoder_layers": "decoder layers (self-, cross-attention + feed-forward)",
    "DecodeConfig.beam_size": "beam width (1: greedy)",
    "DecodeConfig.n_best": "outputs kept per input",
    "DecodeConfig.max_len_extra": "the `extra` of the output limit (see max_len_ratio)",
    "DecodeConfig.max_len_cap": "the `cap` of the output limit (see max_len_ratio)",
    "DecodeConfig.batch_size": "inputs decoded together",
    "VisionConfig.output_dir": "run directory (best/ and last/) when the command gives none",
    "GraphConfig.output_dir": "run directory (best/ and last/) when the command gives none",
}

#: what values a field takes where its class checks them in ``validate`` rather than in
#: ``CHOICES``/``RULES`` ("Class.field")
RANGES = {
    "GraphDataConfig.nodes": "required with name edge_list",
    "GraphDataConfig.edges": "required with name edge_list",
    "TaskData.vocab_size": "at least 1",
    "TaskData.max_src_len": "at least 2 (a token and the end-of-sentence token)",
    "TaskData.max_tgt_len": "at least 1",
    "NumbersData.languages": "a non-empty list of en, de, fr, es",
    "NumbersData.max_number": "at least 1",
    "SpeechData.max_items": "null, or [train, dev, test], each at least 1",
    "NumbersData.count": "at least 1",
    "NumbersData.train_size": "at least 1; with count > 1 only; the three sizes at most half "
    "the lists there are (languages x (max_number + 1)^count)",
    "NumbersData.dev_size": "at least 1; with count > 1 only",
    "NumbersData.test_size": "at least 1; with count > 1 only",
    "DatesData.train_size": "at least 1",
    "DatesData.dev_size": "at least 1",
    "DatesData.test_size": "at least 1",
    "PhrasesData.tgt_lang": "en -> es, es -> en, fr -> en or en -> fr",
    "PhrasesData.train_size": "at least 1",
    "PhrasesData.dev_size": "at least 1",
    "PhrasesData.test_size": "at least 2",
    "PhrasesData.max_adjectives": "0 to 3",
    "PhrasesData.sentence_share": "0 to 1",
    "ParallelData.train": "required",
    "ParallelData.dev": "required",
    "ParallelData.test": "required",
    "Multi30kData.tgt_lang": "not src_lang; de and fr do not pair",
    **{
        f"Seq2SeqConfig.{name}": "at least 1"
        for name in ("embedding_dim", "encoder_hidden", "encoder_layers", "decoder_hidden")
    },
    "Seq2SeqConfig.decoder_layers": "at least 1",
    "Seq2SeqConfig.dropout": "in [0, 1)",
    "Seq2SeqConfig.window": "at least 1",
    "PointerData.points": "at least 2 (hull: 3; tsp: at most 12)",
    **{f"PointerData.{name}": "at least 1" for name in ("train_size", "dev_size", "test_size")},
    **{f"PointerConfig.{name}": "at least 1" for name in ("hidden", "attention_dim")},
    "PointerConfig.encoder_layers": "at least 1",
    "DecodeSettings.beam_size": "at least 1",
    "Seq2SeqConfig.beta": "above 0",
    "Seq2SeqConfig.positions": "at least 1, at least the longest source",
    "TransformerConfig.embedding_dim": "at least 1, divisible by heads",
    **{
        f"TransformerConfig.{name}": "at least 1"
        for name in ("encoder_layers", "decoder_layers", "heads", "ff_dim")
    },
    "TransformerConfig.dropout": "in [0, 1)",
    "TransformerConfig.attention_window": "at least 1, below the longest input",
    "TransformerConfig.global_tokens": "at least 0",
    **{
        f"TransformerConfig.{name}": "at least 1" for name in ("random_features", "attention_chunk")
    },
    "DecodeConfig.n_best": "at most beam_size",
    **{
        f"DataConfig.{name}": "at least 1"
        for name in ("canvas", "clutter_size", "min_digits", "digit_spacing")
    },
    "DataConfig.max_digits": "at least min_digits",
    "DataConfig.dev_size": "1 to 59,999",
    **{
        f"RAMConfig.{name}": "at least 1"
        for name in (
            "glimpses",
            "patch",
            "scales",
            "scale_factor",
            "glimpse_hidden",
            "location_hidden",
            "hidden",
            "mc_samples",
            "dev_mc_samples",
        )
    },
    "RAMConfig.std": "a number > 0",
    "ReaderConfig.channels": "a non-empty list of widths >= 1",
    **{f"ReaderConfig.{name}": "at least 1" for name in ("embed", "hidden", "attention_dim")},
    "PoolingConfig.channels": "a non-empty list of widths >= 1",
    "TextModelConfig.kernel_sizes": "a non-empty list of widths >= 1",
    **{f"TextDataConfig.{name}": "required with task tsv" for name in ("train", "dev", "test")},
}


class UndocumentedKey(Exception):
    """A config field with no comment, docstring or :data:`MEANINGS` entry."""


def first_import(candidates: list[tuple[str, str]]) -> Any:
    """The attribute of the first (module, name) of ``candidates`` that imports."""
    tried = []
    for module, name in candidates:
        try:
            return getattr(importlib.import_module(module), name)
        except (ImportError, AttributeError):
            tried.append(f"{module}.{name}")
    raise ImportError(f"none of {', '.join(tried)} imports; add where it lives now")


# ---- what the source says about each field ----------------------------------------------------


def _clean(text: str) -> str:
    """A comment or docstring as one Markdown line: Sphinx roles and ``literals`` made plain."""
    text = re.sub(r":\w+:`~?([^`]+)`", r"`\1`", text)
    text = text.replace("``", "`")
    return " ".join(text.split())


def source_docs(cls: type) -> dict[str, str]:
    """Field name -> the comments on and directly above its line in ``cls``'s own source, and its
    attribute docstring."""
    try:
        source = textwrap.dedent(inspect.getsource(cls))
    except (OSError, TypeError):
        return {}
    lines = source.splitlines()
    comments = {}  # line number -> comment text
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.COMMENT:
            comments[tok.start[0]] = tok.string.lstrip("#:").strip()
    body = ast.parse(source).body[0].body
    docs = {}
    for i, node in enumerate(body):
        if not (isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)):
            continue
        parts = []
        above, number = [], node.lineno - 1
        while number >= 1 and lines[number - 1].strip().startswith("#"):
            above.insert(0, comments.get(number, ""))
            number -= 1
        parts += above
        parts += [comments[n] for n in range(node.lineno, node.end_lineno + 1) if n in comments]
        after = body[i + 1] if i + 1 < len(body) else None
        if isinstance(after, ast.Expr) and isinstance(after.value, ast.Constant):
            if isinstance(after.value.value, str):
                parts.append(after.value.value)
        text = _clean(" ".join(p for p in parts if p))
        if text:
            docs[node.target.id] = text
    return docs


def meaning(cls: type, name: str) -> str:
    """What field ``name`` of ``cls`` means: its ``DOCS`` entry (a class made from a table, as the
    train sections are), the source of the first class of its MRO that says something about it,
    else :data:`MEANINGS`."""
    if name in getattr(cls, "DOCS", {}):
        return _clean(cls.DOCS[name])
    for klass in cls.__mro__:
        text = source_docs(klass).get(name)
        if text:
            return text
    for klass in cls.__mro__:
        if f"{klass.__name__}.{name}" in MEANINGS:
            return MEANINGS[f"{klass.__name__}.{name}"]
    raise UndocumentedKey(
        f"{cls.__name__}.{name}: no comment or docstring in the class and no MEANINGS entry in "
        "benchmarks/config_reference.py; say what the key means"
    )


# ---- one row per field ------------------------------------------------------------------------


def type_name(tp: Any) -> str:
    """``int | None`` -> ``int or null``; ``list[str]`` -> ``list of str``."""
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        names = [type_name(a) for a in typing.get_args(tp) if a is not type(None)]
        null = ["null"] if type(None) in typing.get_args(tp) else []
        names += null
        return ", ".join(names[:-1]) + " or " + names[-1] if len(names) > 1 else names[0]
    if origin in (list, tuple):
        (item,) = typing.get_args(tp)[:1] or (Any,)
        return f"list of {type_name(item)}"
    return getattr(tp, "__name__", str(tp))


def value_text(value: Any) -> str:
    """A default as YAML would write it."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(value_text(v) for v in value) + "]"
    if isinstance(value, str):
        return value if value else '""'
    return repr(value)


def default_of(field: dataclasses.Field) -> Any:
    if field.default is not dataclasses.MISSING:
        return field.default
    if field.default_factory is not dataclasses.MISSING:
        return field.default_factory()
    return dataclasses.MISSING


def allowed(cls: type, name: str) -> str:
    """What values field ``name`` takes, from the class's CHOICES, RULES, APPLIES and
    :data:`RANGES`."""
    parts = []
    choices = getattr(cls, "CHOICES", {}).get(name)
    if choices:
        parts.append("one of " + ", ".join(map(str, choices)))
    rule = getattr(cls, "RULES", {}).get(name)
    if rule:
        parts.append(rule[1])
    for klass in cls.__mro__:
        if f"{klass.__name__}.{name}" in RANGES:
            parts.append(RANGES[f"{klass.__name__}.{name}"])
            break
    applies = getattr(cls, "APPLIES", {}).get(name)
    if applies:
        attribute, values, *label = applies
        parts.append(f"only with {label[0] if label else attribute} {' or '.join(values)}")
    return "; ".join(parts)


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def table(cls: type, prefix: str, fields: list[str] | None = None) -> list[str]:
    """A Markdown table of ``cls``'s fields (or of ``fields``), keys written ``prefix.key``."""
    hints = typing.get_type_hints(cls)
    rows = ["| key | type | default | values | meaning |", "|---|---|---|---|---|"]
    for field in dataclasses.fields(cls):
        if fields is not None and field.name not in fields:
            continue
        default = default_of(field)
        cells = [
            f"`{prefix}{field.name}`",
            type_name(hints[field.name]),
            "(required)" if default is dataclasses.MISSING else f"`{value_text(default)}`",
            allowed(cls, field.name),
            meaning(cls, field.name),
        ]
        rows.append("| " + " | ".join(_cell(c) for c in cells) + " |")
    return rows


# ---- the document -----------------------------------------------------------------------------


def seq2seq_sections() -> list[str]:
    from attnkit.data.tasks.registry import TASK_REGISTRY
    from attnkit.data.tasks.settings import TaskData
    from attnkit.families.seq2seq.config import DecodeConfig, ExperimentConfig, TrainConfig
    from attnkit.models.architectures import ARCHITECTURES

    sections = {"data", "model", "train", "decode"}
    top = [f.name for f in dataclasses.fields(ExperimentConfig) if f.name not in sections]
    out = ["## Seq2seq experiments", "", "### Top level", "", *table(ExperimentConfig, "", top)]
    common = [f.name for f in dataclasses.fields(TaskData)]
    out += ["", "### `data`: the keys of every task", ""]
    out += [*table(TaskData, "data."), ""]
    out += [f"`data.task` is one of {', '.join(TASK_REGISTRY)}. Each task adds its own keys:", ""]
    for task, entry in TASK_REGISTRY.items():
        own = [f.name for f in dataclasses.fields(entry.config) if f.name not in common]
        out += [f"#### `data.task: {task}`", ""]
        out += [*(table(entry.config, "data.", own) if own else ["No keys of its own."]), ""]
    out += ["### `model`: one set of keys per `model.arch`", ""]
    for arch, entry in ARCHITECTURES.items():
        out += [f"#### `model.arch: {arch}`", "", *table(entry.config, "model."), ""]
    out += ["### `train`", "", *table(TrainConfig, "train."), ""]
    out += ["### `decode`", "", *table(DecodeConfig, "decode."), ""]
    return out


def vision_sections() -> list[str]:
    train = first_import(VISION_TRAIN_CONFIG)
    model_types = first_import(VISION_MODEL_TYPES)
    data = first_import(VISION_DATA_CONFIG)
    experiment = first_import(VISION_EXPERIMENT)
    out = ["## Vision experiments (`family: vision`)", "", "### Top level", ""]
    out += ["`family: vision` marks the file as a vision experiment.", ""]
    out += [*table(experiment, "", ["output_dir"]), "", "### `data`", ""]
    out += [*table(data, "data."), "", "### `model`: one set of keys per `model.type`", ""]
    for name, family in model_types.items():
        tasks = ", ".join(getattr(family, "tasks", ()))
        out += [f"#### `model.type: {name}`", ""]
        out += [f"Reads `data.task` {tasks}.", ""] if tasks else []
        out += [*table(family.config_cls, "model."), ""]
    out += ["### `train`", "", *table(train, "train."), ""]
    return out


def pointer_sections() -> list[str]:
    from attnkit.data.tasks.pointer import PointerData
    from attnkit.families.pointer.config import DecodeSettings, PointerExperiment, TrainConfig
    from attnkit.models.pointer import PointerConfig

    out = ["## Pointer-network experiments (`family: pointer`)", "", "### Top level", ""]
    out += ["`family: pointer` marks the file as a pointer-network experiment.", ""]
    out += [*table(PointerExperiment, "", ["output_dir"]), "", "### `data`", ""]
    out += [*table(PointerData, "data."), "", "### `model`", "", *table(PointerConfig, "model.")]
    out += ["", "### `train`", "", *table(TrainConfig, "train."), ""]
    out += ["### `decode`", "", *table(DecodeSettings, "decode."), ""]
    return out


def graph_sections() -> list[str]:
    from attnkit.data.graph.sources import GraphDataConfig
    from attnkit.families.graph.config import GraphConfig, TrainConfig
    from attnkit.models.graph import GraphModelConfig

    out = ["## Graph experiments (`family: graph`)", "", "### Top level", ""]
    out += ["`family: graph` marks the file as a graph (node classification) experiment.", ""]
    out += [*table(GraphConfig, "", ["output_dir"]), "", "### `data`", ""]
    out += [*table(GraphDataConfig, "data."), "", "### `model`", ""]
    out += [*table(GraphModelConfig, "model."), "", "### `train`", ""]
    out += [*table(TrainConfig, "train."), ""]
    return out


def text_sections() -> list[str]:
    from attnkit.data.tasks.text import TextDataConfig
    from attnkit.families.text.config import TextConfig, TrainConfig
    from attnkit.models.text_classifier import TextModelConfig

    out = ["## Text-classification experiments (`family: text`)", "", "### Top level", ""]
    out += ["`family: text` marks the file as a text-classification experiment.", ""]
    out += [*table(TextConfig, "", ["output_dir"]), "", "### `data`", ""]
    out += [*table(TextDataConfig, "data."), "", "### `model`", ""]
    out += [*table(TextModelConfig, "model."), ""]
    out += ["### `train`", "", *table(TrainConfig, "train."), ""]
    return out


def memnet_sections() -> list[str]:
    from attnkit.data.babi import BabiConfig
    from attnkit.families.memnet.config import MemnetConfig, TrainConfig
    from attnkit.models.memn2n import MemN2NConfig

    out = ["## Memory-network experiments (`family: memnet`)", "", "### Top level", ""]
    out += ["`family: memnet` marks the file as a memory-network (bAbI) experiment.", ""]
    out += [*table(MemnetConfig, "", ["output_dir"]), "", "### `data`", ""]
    out += [*table(BabiConfig, "data."), "", "### `model`", "", *table(MemN2NConfig, "model.")]
    out += ["", "### `train`", "", *table(TrainConfig, "train."), ""]
    return out


def speech_sections() -> list[str]:
    from attnkit.data.tasks.speech_set import SpeechData
    from attnkit.families.speech.config import SpeechExperiment, TrainConfig
    from attnkit.models.las import LASConfig

    out = ["## Speech experiments (`family: speech`)", "", "### Top level", ""]
    out += ["`family: speech` marks the file as a speech (spoken numbers) experiment.", ""]
    out += [*table(SpeechExperiment, "", ["output_dir"]), "", "### `data`", ""]
    out += [*table(SpeechData, "data."), "", "### `model`", "", *table(LASConfig, "model.")]
    out += ["", "### `train`", "", *table(TrainConfig, "train."), ""]
    return out


def generated() -> str:
    """The generated part of docs/CONFIG.md, markers included."""
    lines = [BEGIN, "", *seq2seq_sections(), *vision_sections(), *pointer_sections()]
    lines += [*graph_sections(), *text_sections(), *memnet_sections(), *speech_sections(), END]
    return "\n".join(lines) + "\n"


def replace_generated(document: str, part: str) -> str:
    """``document`` with the text from :data:`BEGIN` to :data:`END` replaced by ``part``."""
    start, end = document.find(BEGIN), document.find(END)
    if start < 0 or end < start:
        raise ValueError(f"{CONFIG_MD.name}: no {BEGIN} ... {END} block to replace")
    rest = document[end + len(END) :].lstrip("\n")
    return document[:start] + part + ("\n" + rest if rest else "")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true", help="exit 1 when docs/CONFIG.md differs")
    args = ap.parse_args()
    sys.path.insert(0, str(ROOT / "src"))
    current = CONFIG_MD.read_text(encoding="utf-8")
    wanted = replace_generated(current, generated())
    if args.check:
        if wanted != current:
            print(f"{CONFIG_MD}: out of date; run python benchmarks/config_reference.py")
            return 1
        return 0
    CONFIG_MD.write_text(wanted, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
