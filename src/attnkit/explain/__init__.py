"""Implicit attention: where a model's output depends on its input, by gradients (captum)."""

from attnkit.explain.saliency import METHODS, saliency_maps

__all__ = ["METHODS", "saliency_maps"]
