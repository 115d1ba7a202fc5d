"""Training loop, checkpoints and schedules."""
