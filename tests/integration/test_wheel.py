"""An installed attnkit (a wheel, not the source checkout) ships its experiment configs."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_a_built_wheel_carries_the_configs_and_configs_lists_them(tmp_path):
    source = tmp_path / "source"
    source.mkdir()
    for name in ("pyproject.toml", "setup.py", "MANIFEST.in", "README.md"):
        shutil.copy(REPO / name, source / name)
    for name in ("src", "configs"):
        shutil.copytree(REPO / name, source / name, ignore=shutil.ignore_patterns("__pycache__"))
    wheels = tmp_path / "wheels"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
         "-w", str(wheels), str(source)],
        check=True,
        capture_output=True,
    )  # fmt: skip
    (wheel,) = wheels.glob("attnkit-*.whl")
    shipped = sorted(p.name for p in (REPO / "configs").glob("*.yaml"))
    with zipfile.ZipFile(wheel) as archive:
        packaged = sorted(
            Path(n).name for n in archive.namelist() if n.startswith("attnkit/configs/")
        )
        archive.extractall(tmp_path / "installed")
    assert packaged == shipped

    # the unpacked wheel, not the checkout, is what `import attnkit` finds
    env = dict(os.environ, PYTHONPATH=str(tmp_path / "installed"))
    script = (
        "import json, attnkit; "
        "print(json.dumps([[c.name, str(c.path)] for c in attnkit.configs()]))"
    )
    listing = subprocess.run(
        [sys.executable, "-c", script],
        env=env,
        cwd=tmp_path,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    found = json.loads(listing)
    assert sorted(name + ".yaml" for name, _ in found) == shipped
    assert all(Path(path).is_relative_to(tmp_path / "installed") for _, path in found)
