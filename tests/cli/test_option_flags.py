"""Each analysis option is declared once (a field of AnalysisOptions and its metadata): its flag,
the flag's help and group, its check, its role in a formula's analyses and its documentation all
come from that one declaration (issue 44)."""

from __future__ import annotations

import argparse
from dataclasses import fields

import pytest
from conftest import run

from onnxroof.cli.app import build_parser
from onnxroof.cli.options import FLAGS as CLI_FLAGS
from onnxroof.cli.options import options_from_flags
from onnxroof.core.errors import OptionError
from onnxroof.options import BACK_OPTIONS, FLAGS, OPTIONS, AnalysisOptions, Count, formula_options

ANALYSING = ("summary", "report", "graph", "explain", "diff", "compare", "check")


def command_parser(command: str) -> argparse.ArgumentParser:
    parser = build_parser(command)
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return action.choices[command]


def parsed(command: str, *argv: str) -> argparse.Namespace:
    args = build_parser(command).parse_args([command, *argv])
    args.program = False  # as main() called in a larger process sets it
    return args


def test_every_field_is_declared_with_its_words_and_its_check():
    assert [f.name for f in fields(AnalysisOptions)] == list(OPTIONS)
    for name, declared in OPTIONS.items():
        assert declared.doc and callable(declared.check), name


@pytest.mark.parametrize("command", ANALYSING)
def test_every_flag_of_an_analysing_command_is_its_options_declaration(command):
    parser = command_parser(command)
    groups = {action.dest: group.title for group in parser._action_groups for action in group._group_actions}
    for name, declared in OPTIONS.items():
        flag = declared.flag
        if flag is None:  # set by the program itself (checker_in_child) or by the command (ignore_missing_dims)
            assert name not in FLAGS
            continue
        action = parser._option_string_actions[flag.name]
        assert action.help == flag.help and action.metavar == flag.metavar, name
        assert groups[action.dest] == flag.group, name
        if isinstance(declared.check, Count):  # the flag's type refuses what the count's minimum refuses
            assert action.type is not None
    assert CLI_FLAGS is FLAGS and set(FLAGS.values()) <= set(parser._option_string_actions)


def test_the_flags_are_listed_in_each_groups_declared_order():
    for group in command_parser("summary")._action_groups:
        listed = [
            a.option_strings[-1]
            for a in group._group_actions
            if a.option_strings and a.option_strings[-1] in FLAGS.values()
        ]
        declared = sorted(
            (d.flag.place, d.flag.name) for d in OPTIONS.values() if d.flag and d.flag.group == group.title
        )
        assert listed == [flag for _, flag in declared], group.title


@pytest.mark.parametrize("name", list(OPTIONS))
def test_every_option_refuses_a_value_of_no_type_it_takes_naming_itself(name):
    with pytest.raises(OptionError) as error:
        AnalysisOptions(**{name: object()})
    assert error.value.option == name


def test_the_flags_give_typed_options_and_the_command_says_whether_they_are_for_several_models():
    args = parsed(
        "summary",
        "m.onnx",
        "--batch",
        "4",
        "--no-overhead",
        "--dim",
        "N=3",
        "--dim",
        "M=2",
        "--dtype",
        "fp16",
        "--context",
        "0",
    )
    options = options_from_flags(args, several_models=False)
    assert options.batch == 4 and options.overhead is False and options.dims == ("N=3", "M=2")
    assert options.dtype == "fp16" and options.context == 0 and options.devices == 1  # --devices not given: 1
    assert options.ignore_missing_dims is False and options.checker_in_child is False
    assert options_from_flags(parsed("compare", "a.onnx", "b.onnx"), several_models=True).ignore_missing_dims
    assert options_from_flags(parsed("summary", "m.onnx"), several_models=False) == AnalysisOptions(
        input_shapes=(), dims=(), values=(), targets=()
    )  # no flag: every option at its default (lists empty)


@pytest.mark.parametrize(
    "argv, words",
    [
        (["--seq", "0"], "expected a positive integer, got '0'"),  # Count(1)
        (["--context", "-1"], "expected a non-negative integer, got '-1'"),  # Count(0)
        (["--devices", "0"], "give a whole number from 1 to 4,096, got '0'"),  # Count(1, MAX_DEVICES)
        (["--phase", "pre"], "invalid choice: 'pre'"),  # Choice(("prefill", "decode"))
    ],
)
def test_a_flags_value_is_checked_as_its_options_check_says(capsys, argv, words):
    code, _, err = run(capsys, "summary", "--example", "shallownet", *argv)
    assert code == 2 and words in err


def test_the_formula_sets_and_the_front_stages_come_from_the_declarations():
    given = AnalysisOptions(dims={"N": 3}, batch=2, dtype="fp16", targets=["l4"], devices=2, partial=True)
    bound, free = formula_options(given), formula_options(given, bound=False)
    assert bound.dims == {"N": 3} and bound.batch == 2 and bound.dtype == "fp16" and bound.targets == ("l4",)
    assert free.dims is None and free.batch is None and free.dtype == "fp16"
    assert bound.devices == 1 and bound.partial is False  # neither counts nor binds: at its default
    assert formula_options(AnalysisOptions(fusion="none")).fusion is None  # no target: no latency formula
    assert {"dtype", "targets", "devices"} <= BACK_OPTIONS and not {"dims", "batch", "phase"} & BACK_OPTIONS


def test_analyze_documents_every_option_from_its_declaration():
    from onnxroof import analyze

    for name, declared in OPTIONS.items():
        assert f"``{name}``: {declared.doc}" in " ".join(analyze.__doc__.split())


@pytest.mark.parametrize(
    "flag, value, words",
    [
        ("--devices", "9" * 5000, "give a whole number from 1 to 4,096"),  # int() refuses past 4,300 digits
        ("--batch", "9" * 5000, "expected a positive integer"),
        ("--devices", "\u0663", "give a whole number"),  # ARABIC-INDIC DIGIT THREE: int() reads it as 3
        ("--batch", "\uff11\uff12", "expected a positive integer"),  # fullwidth 12
    ],
)
def test_a_count_is_ascii_digits_of_sane_length_refused_in_its_own_words(capsys, flag, value, words):
    code, out, err = run(capsys, "summary", "--example", "shallownet", f"{flag}={value}", "-q")
    assert code == 2 and out == "" and err.count("\n") == 1 and words in err, err
    assert len(err) < 300  # the value shown cut to its first 40 characters
