"""A lesson's checks print what they measured beside the threshold, and read back."""

import pytest

from attnkit.lessons import checks


def test_a_check_prints_what_it_measured_and_reads_back(capsys):
    assert checks.check("gain (points)", 31.25, ">=", 30)
    assert not checks.check("error (%)", 0.7, "<", 0.5)
    assert checks.check("ratio", -2, "<=", 0)
    printed = capsys.readouterr().out
    rows = checks.parse_checks("other output\n" + printed)
    assert [(r["check"], r["value"], r["op"], r["threshold"], r["holds"]) for r in rows] == [
        ("gain (points)", 31.25, ">=", 30.0, True),
        ("error (%)", 0.7, "<", 0.5, False),
        ("ratio", -2.0, "<=", 0.0, True),
    ]
    with pytest.raises(ValueError, match="op"):
        checks.check("x", 1, "==", 1)
