"""Exact attention from any PyTorch model that calls scaled-dot-product attention, without
switching its implementation: ``with attnkit.capture(model) as captured: model(...)``.

* :mod:`~attnkit.explain.capture.context`: :func:`capture`, the context manager;
* :mod:`~attnkit.explain.capture.patches`: what is intercepted, and put back;
* :mod:`~attnkit.explain.capture.modules`: which module made each call;
* :mod:`~attnkit.explain.capture.weights`: the weights recomputed from a call's own inputs;
* :mod:`~attnkit.explain.capture.collect`: the layers and heads kept, online aggregates;
* :mod:`~attnkit.explain.capture.result`, :mod:`~attnkit.explain.capture.views`: the records
  and their views.
"""

from attnkit.explain.capture.context import Capture as Capture
from attnkit.explain.capture.context import capture as capture
from attnkit.explain.capture.result import CaptureRecord as CaptureRecord
from attnkit.explain.capture.result import CaptureResult as CaptureResult
