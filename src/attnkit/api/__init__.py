"""The Python API: what the command line, the server and notebooks call.

:func:`load` opens any checkpoint as a model of its family (:class:`Seq2SeqModel`,
:class:`VisionModel`, :class:`PointerModel`, :class:`GraphModel`, :class:`TextModel`,
:class:`MemoryModel`); :func:`train` trains an experiment config into a :class:`Run`;
:func:`configs` lists the shipped configs. Results (:class:`Translation`, :class:`Explanation`,
:class:`Classification`, :class:`PointerSolution`, :class:`TextClassification`, :class:`Answer`,
:class:`Scores`) have ``to_dict()``, ``plot(path_or_ax)`` and ``show()``, which draws them inline
in a notebook. docs/API.md has examples.
"""

from attnkit.api.graph import GraphModel, NodeExplanation
from attnkit.api.loading import load
from attnkit.api.memnet import Answer, MemoryModel
from attnkit.api.pointer import PointerModel, PointerSolution
from attnkit.api.results import (
    Classification,
    Explanation,
    FaithfulnessScores,
    Scores,
    TextClassification,
)
from attnkit.api.seq2seq import Seq2SeqModel
from attnkit.api.text import TextModel
from attnkit.api.training import ConfigInfo, Run, configs, train
from attnkit.api.vision import VisionModel
from attnkit.translator import Translation

__all__ = [
    "Answer",
    "Classification",
    "ConfigInfo",
    "Explanation",
    "PointerModel",
    "PointerSolution",
    "GraphModel",
    "NodeExplanation",
    "FaithfulnessScores",
    "MemoryModel",
    "Run",
    "Scores",
    "Seq2SeqModel",
    "TextClassification",
    "TextModel",
    "Translation",
    "VisionModel",
    "configs",
    "load",
    "train",
]
