"""attnkit: attention mechanisms end to end.

The Python API (see docs/API.md)::

    import attnkit
    model = attnkit.load("runs/demo/model/best")
    model.translate("siebenundneunzig")[0].show()
    run = attnkit.train("configs/numbers_bahdanau.yaml", output_dir="runs/numbers")

Its names are imported on first use (``import attnkit`` alone loads no torch).

Shape legend used in every docstring and ``# (B, T, S)`` comment:
B batch, S source length, T target length, H heads, D width, V vocab,
K beam, R image regions, C channels, G glimpses; graphs: N nodes, E edges.
"""

__version__ = "0.1.0"


#: the API's names that every family shares (:mod:`attnkit.api` defines them)
GENERIC_API = ["ConfigInfo", "Explanation", "FaithfulnessScores", "Run", "Scores"]
GENERIC_API += ["capture", "configs", "load", "train"]


def _public() -> list[str]:
    """The API's names: the generic ones and each family's (its ``public``), read from the
    registry without importing torch."""
    from attnkit.families import FAMILIES

    own = [name for family in FAMILIES.values() for name in family.public_names()]
    return sorted({*GENERIC_API, *own})


__all__ = _public()


def __getattr__(name: str):
    from attnkit.families import FAMILIES

    own = {n for family in FAMILIES.values() for n in family.public_names()}
    if name in GENERIC_API or name in own:  # the registry as it is now: a family added later too
        from attnkit import api

        return getattr(api, name)
    raise AttributeError(f"module 'attnkit' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
