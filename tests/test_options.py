"""AnalysisOptions: one object for every option of an analysis, given to analyze() whole or
built from its keyword arguments, and varied with dataclasses.replace."""

from __future__ import annotations

import re
from dataclasses import FrozenInstanceError, replace

import numpy as np
import pytest
from models import projection

from onnxroof import AnalysisOptions, analyze
from onnxroof.core.errors import ModelError, OptionError, UsageError


def test_the_flags_strings_are_kept_as_a_tuple_and_a_mapping_as_given():
    options = AnalysisOptions(
        input_shapes=["x:2,4"],
        dims=iter(["N=2"]),
        values={"sr": 16000},
        targets=["l4"],
        fusion=["epilogue", "elementwise"],
    )
    assert options.input_shapes == ("x:2,4",) and options.dims == ("N=2",)
    assert options.values == {"sr": 16000} and options.targets == ("l4",)
    assert options.fusion == ("epilogue", "elementwise")
    with pytest.raises(FrozenInstanceError):
        options.batch = 2  # type: ignore[misc]


def test_analyze_takes_the_options_whole_or_one_by_one():
    # N = 3 rows of 32 MACs: 96; N = 5: 160
    assert analyze(projection(), options=AnalysisOptions(dims={"N": 3})).totals.macs == 96
    assert analyze(projection(), dims=["N=3"]).totals.macs == 96
    assert analyze(projection(), options=replace(AnalysisOptions(dims={"N": 3}), dims={"N": 5})).totals.macs == 160


def test_options_and_keyword_arguments_together_are_refused():
    with pytest.raises(UsageError, match="not both"):
        analyze(projection(), dims={"N": 3}, options=AnalysisOptions(batch=2))


def test_changed_names_the_options_off_their_defaults():
    assert AnalysisOptions().changed() == {}
    assert AnalysisOptions(batch=2, overhead=False).changed() == {"batch": 2, "overhead": False}


# ---------------------------------------------------------------------------------------------
# Every argument checked once, when the options are made: a wrong type or a value out of range is
# an OptionError naming the argument, never rounded, iterated letter by letter or a bare TypeError


@pytest.mark.parametrize(
    "arguments, words",
    [
        ({"dims": {"N": 12.7}}, "dims['N'] = 12.7: give a whole number"),
        ({"dims": {"N": True}}, "dims['N'] = True: give a whole number"),
        ({"dims": {"N": None}}, "dims['N'] = None"),
        ({"dims": {"N": -1}}, "dims['N'] = -1: give a whole number of 0 or more"),
        ({"dims": {"N": 2**63}}, "dims['N'] = 9223372036854775808: over the limit, 2^63 - 1"),
        ({"dims": 5}, "dims=5: give a list"),
        ({"input_shapes": {"x": [2.0, 4]}}, "input_shapes['x'] = 2.0"),
        ({"input_shapes": {"x": 5}}, "input_shapes['x'] = 5: give the shape as a list"),
        ({"input_shapes": [1, 3, 32, 32]}, "input_shapes: 1 is not a string"),
        ({"values": {"x": float("nan")}}, "values['x'] = nan"),
        ({"partial": "no"}, "partial='no': give True or False"),
        ({"overhead": 0}, "overhead=0: give True or False"),
        ({"targets": [5]}, "targets: 5 is not a target"),
        ({"batch": "4"}, "batch '4': give a whole number"),
        ({"batch": 2.5}, "batch 2.5: give a whole number"),
        ({"batch": 0}, "batch 0: give a whole number of 1 or more"),
        ({"batch": 2**63}, "batch 9223372036854775808: over the limit"),
        ({"loop_trips": True}, "loop_trips True"),
        ({"fusion": [1]}, "fusion: 1 is not a string"),
        ({"phase": "pre"}, "phase 'pre': choose prefill or decode"),
        ({"dtype": 16}, "dtype=16"),
    ],
)
def test_wrong_types_and_ranges_are_refused_naming_the_argument(arguments, words):
    with pytest.raises(OptionError) as error:
        AnalysisOptions(**arguments)
    assert error.value.option == next(iter(arguments)) and words in str(error.value)
    with pytest.raises(OptionError, match=re.escape(words)):  # analyze() checks its arguments the same way
        analyze(projection(), **arguments)


def test_a_lone_string_is_one_item_not_its_letters():
    assert AnalysisOptions(targets="l4").targets == ("l4",)
    assert AnalysisOptions(input_shapes="x:2,4").input_shapes == ("x:2,4",)
    assert analyze(projection(), targets="l4", dims={"N": 2}).targets[0].target.name == "l4"


def test_numpy_integers_are_whole_numbers():
    assert analyze(projection(), dims={"N": np.int64(3)}).totals.macs == 96


def test_a_model_of_bytes_is_refused_without_echoing_them():
    with pytest.raises(
        OptionError, match=r"model: 3,000 bytes is not a model; give a path or an onnx.ModelProto"
    ) as error:
        analyze(b"abc" * 1000)
    assert "abcabc" not in str(error.value)
    with pytest.raises(OptionError, match="model: int is not a model"):
        analyze(5)
    with pytest.raises(OptionError, match="options=5"):
        analyze(projection(), options=5)


def test_calls_python_would_refuse_with_a_bare_type_error_name_the_argument():
    with pytest.raises(OptionError, match=r"progress=5: give a function called with each stage's name") as error:
        analyze(projection(), dims={"N": 2}, progress=5)
    assert error.value.option == "progress"
    with pytest.raises(OptionError, match=r"analyze\(\): no option named 'dimz' \(did you mean dims\?\)") as error:
        analyze(projection(), dimz={"N": 2})
    assert error.value.option == "dimz"
    with pytest.raises(OptionError, match=r"one positional argument and the options by name: 2 more given by position"):
        analyze(projection(), None, None)
    from onnxroof import formulas

    with pytest.raises(OptionError, match=r"formulas\(\): no option named 'nosuch'"):
        formulas(projection(), nosuch=1)


def test_an_error_message_quoting_a_path_shows_its_escapes_on_one_line(tmp_path):
    path = str(tmp_path / "\x1b[2J\x1b]0;PWNED\x07evil\nFAKE LINE.onnx")
    with pytest.raises(ModelError) as error:
        analyze(path)
    text = str(error.value)  # what a traceback or a log prints
    assert text.isprintable() and "\\x1b[2J\\x1b]0;PWNED\\x07evil\\nFAKE LINE.onnx: no such file" in text
    assert path in error.value.args[0]  # the raw text stays in args
