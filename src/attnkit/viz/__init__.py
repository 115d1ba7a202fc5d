"""Pictures of attention: records (attention as data), heatmaps, HTML reports.

All pictures are pure functions (arrays + labels in, figure or file out) drawn
with matplotlib's object API on the Agg canvas: headless, thread-friendly, and
never touching pyplot's global state.
"""

from attnkit.viz.heatmap import plot_heatmap, plot_heatmap_grid, plot_side_by_side, save_heatmap
from attnkit.viz.records import (
    AttentionRecord,
    load_records,
    load_records_json,
    load_records_npz,
    save_records,
    save_records_json,
    save_records_npz,
)
from attnkit.viz.report import write_report

__all__ = [
    "AttentionRecord",
    "load_records",
    "load_records_json",
    "load_records_npz",
    "plot_heatmap",
    "plot_heatmap_grid",
    "plot_side_by_side",
    "save_heatmap",
    "save_records",
    "save_records_json",
    "save_records_npz",
    "write_report",
]
