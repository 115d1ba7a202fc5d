"""The Python API: what the command line, the server and notebooks call.

:func:`load` opens any checkpoint as the model object of its family (:class:`Seq2SeqModel`,
:class:`VisionModel`, :class:`PointerModel`, :class:`GraphModel`, :class:`TextModel`,
:class:`MemoryModel`); :func:`train` trains an experiment config into a :class:`Run`;
:func:`configs` lists the shipped configs; :func:`capture` records the exact attention weights of
any PyTorch model's forward. Results (:class:`Translation`, :class:`Explanation`,
:class:`Classification`, :class:`PointerSolution`, :class:`TextClassification`, :class:`Answer`,
:class:`Scores`) have ``to_dict()``, ``plot(path_or_ax)`` and ``show()``, which draws them inline
in a notebook. docs/API.md has examples.

The names of the families' own objects come from the registry (each family's ``public``) and are
imported on first use.
"""

# ``as`` re-exports: the names every family shares, which __all__ lists with the families' own
from attnkit.api.loading import load as load
from attnkit.api.training import ConfigInfo as ConfigInfo
from attnkit.api.training import Run as Run
from attnkit.api.training import configs as configs
from attnkit.api.training import train as train
from attnkit.evaluation.scores import FaithfulnessScores as FaithfulnessScores
from attnkit.evaluation.scores import Scores as Scores
from attnkit.explain.capture import capture as capture
from attnkit.explain.explanation import Explanation as Explanation
from attnkit.families import FAMILIES


def family_names() -> dict[str, tuple]:
    """Public name -> (family, its reference), for every name the families add."""
    return {
        name: (family, ref)
        for family in FAMILIES.values()
        for name, ref in family.public_names().items()
    }


#: the names every family shares (``attnkit.GENERIC_API`` lists them too, without importing
#: this package; test_api.py checks that the two agree)
GENERIC_API = [
    "ConfigInfo",
    "Explanation",
    "FaithfulnessScores",
    "Run",
    "Scores",
    "capture",
    "configs",
    "load",
    "train",
]
__all__ = sorted([*GENERIC_API, *family_names()])


def __getattr__(name: str):
    found = family_names().get(name)
    if found is None:
        raise AttributeError(f"module 'attnkit.api' has no attribute {name!r}")
    family, ref = found
    return family.resolve(ref)


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
