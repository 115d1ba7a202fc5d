"""Models: one file per family."""
