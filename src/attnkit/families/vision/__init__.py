"""Attention over images: RAM's hard glimpses (REINFORCE), soft attention (Show, Attend and
Tell), the strip reader and attention pooling."""

from attnkit.families.base import Family

FAMILY = Family(
    name="vision",
    package=__name__,
    model="model:VisionModel",
    train="train:train",
    endpoint="endpoint:ENDPOINT",
    own_options={"evaluate": ("mc_samples", "data_dir")},
    public=("model:VisionModel", "results:Classification"),
)
