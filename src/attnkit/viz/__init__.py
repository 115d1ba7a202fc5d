"""Pictures of attention: records (attention as data), heatmaps, HTML reports.

All pictures are pure functions (arrays + labels in, figure or file out) drawn
with matplotlib's object API on the Agg canvas: headless, thread-friendly, and
never touching pyplot's global state.

The names below are imported on first use, so that importing :mod:`attnkit.viz.records` (as the
translator does) does not load matplotlib (about 30 MB resident) into a process that draws nothing.
"""

import importlib

#: exported name -> the module of attnkit.viz that defines it
_EXPORTS = {
    "AttentionRecord": "records",
    "choose_map": "heads",
    "plot_head_grid": "heads",
    "load_records": "records",
    "load_records_json": "records",
    "load_records_npz": "records",
    "plot_heatmap": "heatmap",
    "plot_heatmap_grid": "heatmap",
    "plot_side_by_side": "heatmap",
    "save_heatmap": "heatmap",
    "save_records": "records",
    "save_records_json": "records",
    "save_records_npz": "records",
    "Tally": "report",
    "write_report": "report",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name not in _EXPORTS:
        raise AttributeError(f"module 'attnkit.viz' has no attribute {name!r}")
    return getattr(importlib.import_module(f"attnkit.viz.{_EXPORTS[name]}"), name)
