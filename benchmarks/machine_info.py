"""What machine a benchmark ran on: CPU model, cores, Python, torch, GPU."""

from __future__ import annotations

import os
import platform
from pathlib import Path


def describe() -> dict:
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    info = {"cpu": cpu, "cores": os.cpu_count(), "python": platform.python_version()}
    if hasattr(os, "sched_getaffinity"):
        info["cores_usable"] = len(os.sched_getaffinity(0))
    try:
        import torch

        info["torch"] = torch.__version__
        info["gpu"] = torch.cuda.get_device_name(0) if torch.cuda.is_available() else None
    except ImportError:
        pass
    return info


def one_line(info: dict | None = None) -> str:
    """'16 x Intel Xeon; GPU NVIDIA H100; torch 2.11.0' for tables."""
    info = info or describe()
    text = f"{info['cores']} x {info['cpu']}"
    if info.get("gpu"):
        text += f"; GPU {info['gpu']}"
    if info.get("torch"):
        text += f"; torch {info['torch']}"
    return text
