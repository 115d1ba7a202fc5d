"""Attention over audio: Listen, Attend and Spell on spoken numbers synthesised offline."""

from attnkit.families.base import Family

FAMILY = Family(
    name="speech",
    package=__name__,
    model="model:SpeechModel",
    train="train:train",
    endpoint="endpoint:ENDPOINT",
    public=("model:SpeechModel",),
    describe="config:describe",
    own_options={"evaluate": ("data_dir",)},
)
