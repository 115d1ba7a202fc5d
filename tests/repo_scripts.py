"""A script of the repository (``benchmarks/*.py``, ``docs/hooks.py``), loaded by its path.

The scripts are no package, so a test loads one from its file. Test modules import this helper
by name (``from repo_scripts import load_script``): ``pythonpath = ["tests"]`` in pyproject.toml's
``[tool.pytest.ini_options]`` puts ``tests/`` on the import path. (Not a conftest.py function:
``from conftest import`` finds whichever conftest module the run imported first.)
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

REPO = Path(__file__).resolve().parents[1]


def load_script(path: str, name: str | None = None) -> ModuleType:
    """The module in ``path`` (from the repository root, e.g. ``"benchmarks/listops.py"``),
    executed afresh on each call.

    It is registered in ``sys.modules`` as ``name`` (default: the file's stem) before it runs,
    as a dataclass defined in it looks its module up there. A script that imports its neighbours
    (``machine_info``) puts its own folder on the path itself.
    """
    spec = importlib.util.spec_from_file_location(name or Path(path).stem, REPO / path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module
