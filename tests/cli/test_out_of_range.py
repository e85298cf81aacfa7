"""Numbers past what ONNX or a float holds are the user's (or the model's) to fix: exit 2 and one
line naming the value and its limit, never an internal error."""

from __future__ import annotations

import onnx
import pytest
from conftest import make_model, run
from onnx import TensorProto, helper

TOO_LARGE = str(2**63)  # one past the largest dim ONNX stores (an int64)


@pytest.fixture
def free_dims(tmp_path):
    path = tmp_path / "m.onnx"
    onnx.save(
        make_model(
            [helper.make_node("Relu", ["x"], ["y"])],
            [("x", TensorProto.FLOAT, ["n", "s"])],
            [("y", TensorProto.FLOAT, ["n", "s"])],
        ),
        path,
    )
    return str(path)


@pytest.mark.parametrize(
    "flags, value",
    [
        (["--dim", f"s={TOO_LARGE}"], TOO_LARGE),
        (["--input-shape", f"x:1,{TOO_LARGE}"], TOO_LARGE),
        (["--dim", "s=4", "--batch", TOO_LARGE], TOO_LARGE),
        (["--dim", "s=4", "--seq", TOO_LARGE], TOO_LARGE),
        (["--dim", "s=4", "--sweep", f"batch=1,{TOO_LARGE}"], TOO_LARGE),
        (["--dim", "s=4", "--fail-if", "params>1e999"], "1e999"),
        (["--dim", "s=4", "--fail-if", "params>" + "9" * 400], "9" * 400),
    ],
)
def test_a_flag_value_past_its_limit_exits_2_naming_it(capsys, free_dims, flags, value):
    code, out, err = run(capsys, "summary", free_dims, *flags)
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1, err
    assert value in err and ("2^63 - 1" in err or "at most 1e300" in err), err


def test_the_largest_dim_onnx_stores_is_still_counted(capsys, free_dims):
    code, out, _ = run(capsys, "summary", free_dims, "--dim", f"s={2**63 - 1}", "--format", "json")
    assert code == 0 and str(2**63 - 1) in out


def test_a_model_dim_written_as_a_huge_number_exits_2(capsys, tmp_path):
    path = tmp_path / "huge.onnx"
    dims = [1, "99999999999999999999999"]
    onnx.save(
        make_model(
            [helper.make_node("Relu", ["x"], ["y"])], [("x", TensorProto.FLOAT, dims)], [("y", TensorProto.FLOAT, dims)]
        ),
        path,
    )
    code, out, err = run(capsys, "summary", path)
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "'99999999999999999999999', over the limit, 2^63 - 1" in err


def test_a_dim_expression_that_comes_past_the_limit_exits_2(capsys, tmp_path):
    path = tmp_path / "sum.onnx"
    onnx.save(
        make_model(
            [helper.make_node("Relu", ["x"], ["y"])],
            [("x", TensorProto.FLOAT, [1, "a + b"])],
            [("y", TensorProto.FLOAT, [1, "a + b"])],
        ),
        path,
    )
    code, _, err = run(capsys, "summary", path, "--dim", f"a={2**62}", "--dim", f"b={2**62}")
    assert code == 2 and "comes to 9223372036854775808, over the limit" in err
