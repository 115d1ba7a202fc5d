"""attnkit: attention mechanisms end to end.

Shape legend used in every docstring and ``# (B, T, S)`` comment:
B batch, S source length, T target length, H heads, D width, V vocab,
K beam, R image regions, C channels, G glimpses.
"""

__version__ = "0.1.0"
