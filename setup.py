"""Build hook: the experiment configs of ``configs/`` ship inside the package.

``configs/`` stays at the top of the repository, where the README's commands name it
(``attnkit train configs/numbers_bahdanau.yaml``); a wheel carries a copy as ``attnkit/configs``,
so ``attnkit.configs()`` lists them in an installed attnkit too. Everything else about the
build is in pyproject.toml.
"""

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent


class BuildWithConfigs(build_py):
    """``build_py``, then ``configs/*.yaml`` copied into the built ``attnkit/configs``."""

    def run(self):
        super().run()
        target = Path(self.build_lib) / "attnkit" / "configs"
        target.mkdir(parents=True, exist_ok=True)
        for path in sorted((HERE / "configs").glob("*.yaml")):
            shutil.copyfile(path, target / path.name)


setup(cmdclass={"build_py": BuildWithConfigs})
