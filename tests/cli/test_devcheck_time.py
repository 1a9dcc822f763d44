"""`katas dev check` says where the census spent its test time (issue 30: find where it goes)."""

from collections import Counter

from katas_cli.devcheck import time_lines


def test_time_is_shared_out_by_kind_then_the_slowest_phases_named():
    seconds = Counter(
        {
            ("phase3", "redteam"): 30.0,
            ("phase3", "reference"): 10.0,
            ("phase9", "redteam"): 50.0,
            ("phase9", "stub"): 10.0,
        }
    )
    share, slowest = time_lines(seconds)
    assert share == "test time 100 s (summed over workers): redteam 80%, reference 10%, stub 10%"
    assert slowest == "slowest phases: phase9 60 s, phase3 40 s"


def test_no_time_no_lines():
    assert time_lines(Counter()) == []
