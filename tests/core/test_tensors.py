"""TensorInfo.renamed copies the worked-out fields instead of recomputing them: the copy must
read exactly like a TensorInfo built from scratch for the new name."""

import pytest
from onnx import TensorProto, helper

from onnxroof.core.tensors import TensorInfo
from onnxroof.frontend.shapes import _ValueInfoReader


@pytest.mark.parametrize("shape", [(2, 3, 4), (), ("batch", 8), (None, 5), None])
def test_renamed_matches_a_fresh_tensor_info(shape):
    original = TensorInfo("x", TensorProto.FLOAT, shape)
    copy = original.renamed("y")
    fresh = TensorInfo("y", TensorProto.FLOAT, shape)
    assert (copy.name, copy.dtype, copy.shape) == ("y", TensorProto.FLOAT, shape)
    assert (copy.is_known, copy.numel) == (fresh.is_known, fresh.numel)
    assert copy == fresh and original.name == "x"


def test_reader_gives_each_tensor_its_own_name_for_a_shared_type():
    read = _ValueInfoReader()
    first = read(helper.make_tensor_value_info("a", TensorProto.FLOAT, [2, 3]))
    second = read(helper.make_tensor_value_info("b", TensorProto.FLOAT, [2, 3]))
    other = read(helper.make_tensor_value_info("c", TensorProto.INT64, ["n"]))
    assert (first.name, second.name, other.name) == ("a", "b", "c")
    assert (second.dtype, second.shape, second.is_known, second.numel) == (TensorProto.FLOAT, (2, 3), True, 6)
    assert (other.dtype, other.shape, other.is_known, other.numel) == (TensorProto.INT64, ("n",), False, None)
    assert first.name == "a"  # reading b did not rename the tensor read first
