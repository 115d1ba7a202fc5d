"""A toy family, defined outside attnkit for the family contract test (test_families.py).

Its model pools a list of numbers by attention, ``softmax(sharpness * x)``, and learns the
sharpness that makes the pooled value the list's largest number. It is one folder and one
:class:`~attnkit.families.base.Family` record: the test registers it and uses it through
``attnkit.train``, ``attnkit.load``, the CLI and the server, with no edit to attnkit.
"""

from attnkit.families.base import Family

FAMILY = Family(
    name="toy",
    package=__name__,
    model="model:ToyModel",
    train="train:train",
    describe="train:describe",
    endpoint="endpoint:ENDPOINT",
    public=("model:ToyModel",),
)
