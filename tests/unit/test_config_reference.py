"""docs/CONFIG.md lists every configuration key as the config classes define it: its tables are
what ``benchmarks/config_reference.py`` writes from them today, every key of every shipped
config has a row, and a key with nothing that says what it means is an error."""

from dataclasses import dataclass, field
from pathlib import Path

import pytest
import yaml
from repo_scripts import load_script

REPO_ROOT = Path(__file__).resolve().parents[2]
CONFIG_MD = REPO_ROOT / "docs" / "CONFIG.md"


def _script():
    return load_script("benchmarks/config_reference.py")


def test_config_md_holds_the_tables_the_config_classes_give():
    script = _script()
    document = CONFIG_MD.read_text(encoding="utf-8")
    assert script.replace_generated(document, script.generated()) == document, (
        "docs/CONFIG.md is out of date: run python benchmarks/config_reference.py"
    )


@pytest.mark.parametrize("config", sorted((REPO_ROOT / "configs").glob("*.yaml")), ids=str)
def test_every_key_of_a_shipped_config_has_a_row(config):
    document = CONFIG_MD.read_text(encoding="utf-8")
    data = yaml.safe_load(config.read_text(encoding="utf-8"))
    keys = [key for key, value in data.items() if not isinstance(value, dict)]
    keys += [
        f"{section}.{key}"
        for section, value in data.items()
        if isinstance(value, dict)
        for key in value
        if (section, key) != ("model", "type")  # the vision model's name: a heading of its own
    ]
    missing = [key for key in keys if f"| `{key}` |" not in document]
    assert missing == [], f"{config.name}: no row in docs/CONFIG.md for {missing}"


@dataclass
class Documented:
    """A section whose keys say what they mean in each way the classes do."""

    plain: int = 1  # a comment on the line
    # a comment above the line
    above: str = "x"
    docstring: list[str] = field(default_factory=lambda: ["a", "b"])
    """An attribute docstring with ``code``."""
    maybe: float | None = None  # one | two

    CHOICES = {"above": ("x", "y")}
    RULES = {"plain": (lambda v: v >= 1, "at least 1")}


@dataclass
class Undocumented(Documented):
    silent: int = 0


def test_each_row_gives_type_default_values_and_meaning_from_the_class():
    rows = _script().table(Documented, "sec.")
    assert rows[2:] == [
        "| `sec.plain` | int | `1` | at least 1 | a comment on the line |",
        "| `sec.above` | str | `x` | one of x, y | a comment above the line |",
        "| `sec.docstring` | list of str | `[a, b]` |  | An attribute docstring with `code`. |",
        "| `sec.maybe` | float or null | `null` |  | one \\| two |",
    ]


def test_a_key_that_nothing_documents_is_an_error():
    script = _script()
    with pytest.raises(script.UndocumentedKey, match="Undocumented.silent"):
        script.table(Undocumented, "sec.")
