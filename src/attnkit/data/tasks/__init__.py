"""Tasks: each module produces train/dev/test lists of (source, target) text pairs."""
