"""Budgets: the relative change they compare and the message a broken one prints (the survivors
of a mutmut run over budgets.py, docs/testing.md)."""

from __future__ import annotations

import math

import pytest

from onnxroof.cli.app import main
from onnxroof.compare.budgets import check_budgets, parse_budget, percent_change


@pytest.mark.parametrize(
    "before, after, change",
    [
        (10, 15, 50.0),
        (10, 5, -50.0),
        (-10, -5, 50.0),  # relative to the size of the base
        (0, 0, 0.0),
        (0, 3, math.inf),
        (0, 0.5, math.inf),
        (0, -3, -math.inf),  # from zero: none, or infinite
    ],
)
def test_percent_change(before, after, change):
    assert percent_change(before, after) == change


def test_broken_budget_message_names_the_budget_and_the_value(capsys):
    # ShallowNet stores 328,586 parameters (cost-model.md section 2)
    assert main(["summary", "--example", "shallownet", "--fail-if", "params>300k", "--fail-if", "params>5M"]) == 1
    err = capsys.readouterr().err
    assert "onnxroof: budget broken: params>300k: params is 329 k (328,586) -> BROKEN" in err
    assert "params>5M" not in err  # a budget that holds is not printed


def test_budget_on_a_target_is_labelled_with_it():
    budget = parse_budget("latency[myriad-x]>1ms")
    assert budget.label() == "latency[myriad-x]" and parse_budget("params>5M").label() == "params"


def test_relative_budget_message_shows_the_change_in_percent():
    class Stub:  # an Analysis with just the totals a params budget reads
        def __init__(self, params):
            self.totals = type("T", (), {"params": params})()

    (result,) = check_budgets([parse_budget("params>+5%")], Stub(120), Stub(100))
    assert result.broken and result.describe() == "params>+5%: params is +20.00% -> BROKEN"
    (result,) = check_budgets([parse_budget("params>+5%")], Stub(101), Stub(100))
    assert not result.broken and result.describe() == "params>+5%: params is +1.00% -> ok"


def test_relative_budget_on_a_target_compares_that_target_in_both_models(capsys):
    # ShallowNet -> its separable version on myriad-x: fewer MACs and weights, so the latency
    # falls, and "latency[myriad-x]>+2%" holds; the other way round it grows and the gate exits 1
    base, head = "example:shallownet", "example:shallownet-separable"
    assert main(["diff", base, head, "--target", "myriad-x", "--fail-if", "latency[myriad-x]>+2%"]) == 0
    assert main(["diff", head, base, "--target", "myriad-x", "--fail-if", "latency[myriad-x]>+2%"]) == 1
    assert "latency[myriad-x]>+2%: latency[myriad-x] is +" in capsys.readouterr().err
