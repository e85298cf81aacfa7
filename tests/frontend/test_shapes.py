"""Stage 2 (onnxroof.frontend.shapes): flag parsing, input binding, ONNX inference and the partial evaluator.

Every graph is built with onnx.helper; every expected shape is derived by hand in a comment. The
"gap" tests first assert that ONNX's own inference (data_prop=True, all inputs bound) leaves a
shape unknown, so they prove the partial evaluator is what closes it.
"""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto as T
from onnx import helper, numpy_helper

from onnxroof import analyze
from onnxroof.core.errors import OptionError, UsageError
from onnxroof.core.nodes import node_names, read_node_fields
from onnxroof.frontend.evaluator import MAX_VALUE_ELEMENTS
from onnxroof.frontend.inputs import bind_inputs, parse_dim, parse_input_shape
from onnxroof.frontend.shapes import infer_shapes

OPSET = 17


def make_model(nodes, inputs, outputs, initializers=(), value_info=(), opsets=(("", OPSET),)):
    graph = helper.make_graph(nodes, "g", inputs, outputs, list(initializers), value_info=list(value_info))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid(d, v) for d, v in opsets])


def int64s(name, values):
    return numpy_helper.from_array(np.array(values, dtype=np.int64), name)


def floats(name, values):
    return numpy_helper.from_array(np.array(values, dtype=np.float32), name)


def tensor_input(name, dims, dtype=T.FLOAT):
    return helper.make_tensor_value_info(name, dtype, dims)


def any_output(name, dtype=T.FLOAT):
    return helper.make_tensor_value_info(name, dtype, None)


def shapes_of(model):
    """Run onnxroof's inference on a bound model."""
    return infer_shapes(model, list(model.graph.node))


def onnx_only_shape(model, name):
    """The shape plain ONNX inference gives ``name``: a tuple with None for unknown dims, or None."""
    inferred = onnx.shape_inference.infer_shapes(model, strict_mode=False, data_prop=True)
    for value_info in (*inferred.graph.value_info, *inferred.graph.output):
        if value_info.name == name and value_info.type.tensor_type.HasField("shape"):
            dims = value_info.type.tensor_type.shape.dim
            return tuple(d.dim_value if d.HasField("dim_value") else None for d in dims)
    return None


def is_fully_known(shape):
    return shape is not None and all(isinstance(d, int) for d in shape)


# ---------------------------------------------------------------------------------------------
# Flags


@pytest.mark.parametrize(
    "text, expected",
    [
        ("x:1,3,224,224", ("x", (1, 3, 224, 224))),
        ("x:1x3x224x224", ("x", (1, 3, 224, 224))),
        ("input:0:1,3,8,8", ("input:0", (1, 3, 8, 8))),  # the name keeps its colons
        ("images: 1, 3, 32, 32", ("images", (1, 3, 32, 32))),
        ("1,3,32,32", (None, (1, 3, 32, 32))),  # no name: the model's only input
    ],
)
def test_parse_input_shape(text, expected):
    assert parse_input_shape(text) == expected


@pytest.mark.parametrize("text", ["x:1,a", "x:", "x:-1,3", "x:1,,3", "x:1.5", "x:²", ""])
def test_parse_input_shape_rejects_bad_forms(text):
    with pytest.raises(OptionError, match="expected NAME:D1,D2") as caught:
        parse_input_shape(text)
    assert caught.value.option == "input_shapes"


def test_parse_dim():
    assert parse_dim("batch=8") == ("batch", 8)
    assert parse_dim(" seq = 128") == ("seq", 128)


@pytest.mark.parametrize("text", ["batch", "=3", "batch=", "batch=-1", "batch=x", "batch=2.5"])
def test_parse_dim_rejects_bad_forms(text):
    with pytest.raises(OptionError, match="expected SYMBOL=VALUE") as caught:
        parse_dim(text)
    assert caught.value.option == "dims"


# ---------------------------------------------------------------------------------------------
# Binding


def conv_relu_model(input_dims=("N", 3, 8, 8)):
    """x -> Conv(4 filters 3x3, pad 1) -> Relu: the output is [N, 4, 8, 8]."""
    weight = numpy_helper.from_array(np.zeros((4, 3, 3, 3), np.float32), "w")
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], name="conv", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c"], ["y"], name="relu"),
    ]
    output = helper.make_tensor_value_info("y", T.FLOAT, ["N", 4, 8, 8])
    return make_model(nodes, [tensor_input("x", list(input_dims))], [output], [weight])


def test_bind_unknown_input_name_suggests_the_real_one():
    model = conv_relu_model()
    with pytest.raises(UsageError, match=r"no input 'xx'.*did you mean 'x'"):
        bind_inputs(model, [("xx", (1, 3, 8, 8))])


def test_bind_wrong_rank():
    with pytest.raises(UsageError, match="rank 4"):
        bind_inputs(conv_relu_model(), [("x", (1, 3, 8))])


def test_bind_unknown_symbol_names_the_known_ones():
    with pytest.raises(UsageError, match=r"no dim named 'batch' \(named dims: N\)"):
        bind_inputs(conv_relu_model(), dims={"batch": 2})


def test_bind_unnamed_shape_needs_a_single_input():
    model = make_model(
        [helper.make_node("Add", ["a", "b"], ["y"])],
        [tensor_input("a", [2]), tensor_input("b", [2])],
        [any_output("y")],
    )
    with pytest.raises(UsageError, match="one input"):
        bind_inputs(model, [(None, (2,))])


def test_bind_error_leaves_the_model_untouched():
    model = conv_relu_model()
    before = model.SerializeToString()
    with pytest.raises(UsageError):
        bind_inputs(model, [("x", (2, 3, 8, 8))], dims={"nope": 1})
    assert model.SerializeToString() == before


def test_bound_symbol_propagates_through_conv_and_relu():
    model = conv_relu_model()
    bind_inputs(model, dims={"N": 4})
    result = shapes_of(model)
    # Conv 3x3, pad 1, stride 1 keeps 8x8; 4 filters: [4, 4, 8, 8]; Relu keeps it.
    assert result.tensors["c"].shape == (4, 4, 8, 8)
    assert result.tensors["y"].shape == (4, 4, 8, 8)
    assert result.inputs[0].shape == (4, 3, 8, 8)
    assert result.unresolved == []


def test_symbol_bound_by_input_shape_binds_it_everywhere():
    # a and b are both [N, 5]: --input-shape a:3,5 says N = 3, so b is [3, 5] as well.
    model = make_model(
        [helper.make_node("Add", ["a", "b"], ["y"])],
        [tensor_input("a", ["N", 5]), tensor_input("b", ["N", 5])],
        [any_output("y")],
    )
    bind_inputs(model, [("a", (3, 5))])
    result = shapes_of(model)
    assert [i.shape for i in result.inputs] == [(3, 5), (3, 5)]
    assert result.tensors["y"].shape == (3, 5)


def test_dim_contradicting_input_shape_is_refused():
    with pytest.raises(UsageError, match="contradicts"):
        bind_inputs(conv_relu_model(), [("x", (2, 3, 8, 8))], dims={"N": 4})


def test_input_shape_and_dim_together():
    # --dim N=2 names a symbol of x even though --input-shape rewrites x itself (same value).
    model = conv_relu_model()
    bind_inputs(model, [("x", (2, 3, 8, 8))], dims={"N": 2})
    assert shapes_of(model).tensors["y"].shape == (2, 4, 8, 8)


# ---------------------------------------------------------------------------------------------
# Unbound dims are reported, never guessed


def test_unbound_symbol_is_reported_with_its_fix_and_nothing_is_counted():
    analysis = analyze(conv_relu_model(), partial=True)
    assert [(d.input_name, d.axis, d.symbol) for d in analysis.unresolved_dims] == [("x", 0, "N")]
    assert analysis.unresolved_dims[0].fix.startswith("--dim N=")
    conv, relu = analysis.nodes
    assert conv.status == relu.status == "unknown_shape"
    assert analysis.totals.macs == 0
    assert not analysis.complete
    assert not is_fully_known(analysis.outputs[0].shape)  # no batch was guessed
    assert any("--dim N=" in w for w in analysis.warnings)


def test_binding_the_reported_symbol_completes_the_analysis():
    analysis = analyze(conv_relu_model(), dims=["N=2"])
    assert analysis.unresolved_dims == []
    conv = analysis.nodes[0]
    assert conv.status == "ok"
    # MACs = N * C_out * H * W * C_in * kh * kw = 2 * 4 * 8 * 8 * 3 * 3 * 3 = 13,824
    assert conv.macs == 13_824
    assert analysis.outputs[0].shape == (2, 4, 8, 8)


def test_unnamed_unknown_dim_gets_an_input_shape_fix():
    model = conv_relu_model(input_dims=(None, 3, 8, 8))  # dim 0 has neither a value nor a name
    (dim,) = shapes_of(model).unresolved
    assert (dim.input_name, dim.axis, dim.symbol) == ("x", 0, None)
    assert dim.fix == "--input-shape x:1,3,8,8"  # runs as pasted; the warning asks for real values


# ---------------------------------------------------------------------------------------------
# The partial evaluator closes the gaps ONNX leaves


def test_shape_gather_unsqueeze_concat_reshape():
    # (a) x [2,3,4,5] -> Reshape(x, [Shape(x)[0], -1]) = [2, 3*4*5] = [2, 60]
    nodes = [
        helper.make_node("Shape", ["x"], ["s"]),
        helper.make_node("Gather", ["s", "zero"], ["batch"], axis=0),
        helper.make_node("Unsqueeze", ["batch", "axes0"], ["batch1"]),
        helper.make_node("Concat", ["batch1", "minus1"], ["shape"], axis=0),
        helper.make_node("Reshape", ["x", "shape"], ["y"]),
    ]
    initializers = [int64s("zero", 0), int64s("axes0", [0]), int64s("minus1", [-1])]
    model = make_model(nodes, [tensor_input("x", [2, 3, 4, 5])], [any_output("y")], initializers)
    result = shapes_of(model)
    assert result.tensors["y"].shape == (2, 60)
    assert result.values["shape"].tolist() == [2, -1]


def position_ids_model():
    # (b) x [2,7,16]; n = Shape(x)[1] = 7; Range(0, 7, 1) = [0..6] of shape [7];
    # Unsqueeze -> [1,7]; Expand to [2,1] -> [2,7]; Gather rows of a [32,16] table -> [2,7,16];
    # Add x -> [2,7,16].
    table = numpy_helper.from_array(np.zeros((32, 16), np.float32), "table")
    nodes = [
        helper.make_node("Shape", ["x"], ["s"]),
        helper.make_node("Gather", ["s", "one"], ["n"], axis=0),
        helper.make_node("Range", ["zero", "n", "one"], ["positions"]),
        helper.make_node("Unsqueeze", ["positions", "axes0"], ["positions1"]),
        helper.make_node("Expand", ["positions1", "batch_shape"], ["position_ids"]),
        helper.make_node("Gather", ["table", "position_ids"], ["embedded"], axis=0),
        helper.make_node("Add", ["x", "embedded"], ["y"]),
    ]
    initializers = [int64s("zero", 0), int64s("one", 1), int64s("axes0", [0]), int64s("batch_shape", [2, 1]), table]
    return make_model(nodes, [tensor_input("x", [2, 7, 16])], [any_output("y")], initializers)


def test_range_from_a_shape_then_expand_and_gather():
    model = position_ids_model()
    assert onnx_only_shape(model, "positions") == (None,)  # the gap: ONNX cannot size the Range
    assert not is_fully_known(onnx_only_shape(model, "embedded"))
    result = shapes_of(model)
    assert result.values["positions"].tolist() == [0, 1, 2, 3, 4, 5, 6]
    assert result.tensors["position_ids"].shape == (2, 7)
    assert result.tensors["embedded"].shape == (2, 7, 16)
    assert result.tensors["y"].shape == (2, 7, 16)


def test_expand_with_minus_one_via_constant_of_shape_equal_where():
    # (c) PyTorch's cls.expand(B, -1, -1): shape = [Shape(x)[0:1], -1, -1] = [2,-1,-1];
    # ones = ConstantOfShape(Shape(shape)) = [1,1,1]; Where(shape == -1, ones, shape) = [2,1,1];
    # Expand(cls [1,1,128], [2,1,1]) = [2,1,128]; Concat with x [2,6,128] on axis 1 = [2,7,128].
    one = numpy_helper.from_array(np.array([1], np.int64), "one")
    nodes = [
        helper.make_node("Shape", ["x"], ["s"]),
        helper.make_node("Slice", ["s", "start0", "end1"], ["batch"]),
        helper.make_node("Concat", ["batch", "minus1", "minus1"], ["shape"], axis=0),
        helper.make_node("Shape", ["shape"], ["rank"]),
        helper.make_node("ConstantOfShape", ["rank"], ["ones"], value=one),
        helper.make_node("Equal", ["shape", "minus1"], ["is_keep"]),
        helper.make_node("Where", ["is_keep", "ones", "shape"], ["expand_shape"]),
        helper.make_node("Expand", ["cls", "expand_shape"], ["cls_tokens"]),
        helper.make_node("Concat", ["cls_tokens", "x"], ["y"], axis=1),
    ]
    cls = numpy_helper.from_array(np.zeros((1, 1, 128), np.float32), "cls")
    initializers = [int64s("start0", [0]), int64s("end1", [1]), int64s("minus1", [-1]), cls]
    model = make_model(nodes, [tensor_input("x", [2, 6, 128])], [any_output("y")], initializers)
    assert not is_fully_known(onnx_only_shape(model, "cls_tokens"))  # the gap
    assert not is_fully_known(onnx_only_shape(model, "y"))
    result = shapes_of(model)
    assert result.values["expand_shape"].tolist() == [2, 1, 1]
    assert result.tensors["cls_tokens"].shape == (2, 1, 128)
    assert result.tensors["y"].shape == (2, 7, 128)


def test_causal_mask_from_constant_of_shape_and_where():
    # seq = Shape(x)[1:2] = [5]; ones = ConstantOfShape([5,5]) (Concat of seq twice);
    # Trilu(ones) is lower-triangular; Where(tri == 0, -inf, 0) -> [5,5] mask;
    # Expand to [Shape(x)[0:1], 1, 5, 5] = [3,1,5,5]; Add scores [3,1,5,5].
    nodes = [
        helper.make_node("Shape", ["x"], ["s"]),
        helper.make_node("Slice", ["s", "start1", "end2"], ["seq"]),
        helper.make_node("Slice", ["s", "start0", "end1"], ["batch"]),
        helper.make_node("Concat", ["seq", "seq"], ["square"], axis=0),
        helper.make_node("ConstantOfShape", ["square"], ["ones"], value=floats("one", [1.0])),
        helper.make_node("Trilu", ["ones"], ["lower"], upper=0),
        helper.make_node("Equal", ["lower", "fzero"], ["masked"]),
        helper.make_node("Where", ["masked", "ninf", "fzero"], ["mask"]),
        helper.make_node("Concat", ["batch", "end1", "square"], ["mask_shape"], axis=0),
        helper.make_node("Expand", ["mask", "mask_shape"], ["mask4"]),
        helper.make_node("Add", ["scores", "mask4"], ["y"]),
    ]
    initializers = [
        int64s("start0", [0]),
        int64s("start1", [1]),
        int64s("end1", [1]),
        int64s("end2", [2]),
        numpy_helper.from_array(np.array(0.0, np.float32), "fzero"),
        numpy_helper.from_array(np.array(-np.inf, np.float32), "ninf"),
    ]
    inputs = [tensor_input("x", [3, 5, 16]), tensor_input("scores", [3, 1, 5, 5])]
    model = make_model(nodes, inputs, [any_output("y")], initializers)
    result = shapes_of(model)
    assert result.tensors["mask"].shape == (5, 5)
    assert result.values["mask"][0].tolist() == [0, -np.inf, -np.inf, -np.inf, -np.inf]
    assert result.tensors["mask4"].shape == (3, 1, 5, 5)
    assert result.tensors["y"].shape == (3, 1, 5, 5)


def scaled_sizes_nodes(op):
    # Shape(x)[2:4] = [10,12] -> float -> op 2.0 (Mul: [20,24] / Div: [5,6]) -> Floor -> int64
    return [
        helper.make_node("Shape", ["x"], ["s"]),
        helper.make_node("Slice", ["s", "start2", "end4"], ["hw"]),
        helper.make_node("Cast", ["hw"], ["hw_float"], to=T.FLOAT),
        helper.make_node(op, ["hw_float", "two"], ["scaled"]),
        helper.make_node("Floor", ["scaled"], ["floored"]),
        helper.make_node("Cast", ["floored"], ["hw_int"], to=T.INT64),
    ]


SCALE_INITIALIZERS = [int64s("start2", [2]), int64s("end4", [4]), floats("two", [2.0])]


def test_float_size_arithmetic_into_resize():
    # (d) sizes = Concat([1,3], [20,24]) = [1,3,20,24]; Resize(x, sizes) -> [1,3,20,24]; Relu keeps it.
    nodes = scaled_sizes_nodes("Mul") + [
        helper.make_node("Concat", ["nc", "hw_int"], ["sizes"], axis=0),
        helper.make_node("Resize", ["x", "", "", "sizes"], ["resized"], mode="nearest"),
        helper.make_node("Relu", ["resized"], ["y"]),
    ]
    initializers = [*SCALE_INITIALIZERS, int64s("nc", [1, 3])]
    model = make_model(nodes, [tensor_input("x", [1, 3, 10, 12])], [any_output("y")], initializers)
    assert not is_fully_known(onnx_only_shape(model, "resized"))  # the gap
    result = shapes_of(model)
    assert result.tensors["resized"].shape == (1, 3, 20, 24)
    assert result.tensors["y"].shape == (1, 3, 20, 24)


def test_float_size_arithmetic_into_reshape():
    # (d') shape = Concat([-1], [5,6]) = [-1,5,6]; x has 1*3*10*12 = 360 elements -> [360/30, 5, 6] = [12,5,6].
    nodes = scaled_sizes_nodes("Div") + [
        helper.make_node("Concat", ["minus1", "hw_int"], ["shape"], axis=0),
        helper.make_node("Reshape", ["x", "shape"], ["y"]),
    ]
    initializers = [*SCALE_INITIALIZERS, int64s("minus1", [-1])]
    model = make_model(nodes, [tensor_input("x", [1, 3, 10, 12])], [any_output("y")], initializers)
    assert not is_fully_known(onnx_only_shape(model, "y"))  # the gap
    assert shapes_of(model).tensors["y"].shape == (12, 5, 6)


def test_gap_closed_in_analyze_so_nodes_are_counted():
    # The position-ids model through the whole pipeline: the Add over [2,7,16] is costed.
    analysis = analyze(position_ids_model())
    add = next(r for r in analysis.nodes if r.op_type == "Add")
    assert add.status == "ok"
    assert add.output_shapes == [[2, 7, 16]]
    assert analysis.totals.not_counted == {}


# ---------------------------------------------------------------------------------------------
# Contrib ops: stored value_info is used


def fused_matmul_model(import_contrib_domain=True):
    # FusedMatMul(a [2,4,8], w [8,16]) -> [2,4,16] (stored in value_info by the optimizer);
    # Relu keeps [2,4,16]; Reshape to [-1,16] -> [8,16].
    nodes = [
        helper.make_node("FusedMatMul", ["a", "w"], ["mm"], domain="com.microsoft", alpha=1.0),
        helper.make_node("Relu", ["mm"], ["r"]),
        helper.make_node("Reshape", ["r", "shape"], ["y"]),
    ]
    initializers = [numpy_helper.from_array(np.zeros((8, 16), np.float32), "w"), int64s("shape", [-1, 16])]
    opsets = [("", OPSET)] + ([("com.microsoft", 1)] if import_contrib_domain else [])
    return make_model(
        nodes,
        [tensor_input("a", [2, 4, 8])],
        [any_output("y")],
        initializers,
        value_info=[helper.make_tensor_value_info("mm", T.FLOAT, [2, 4, 16])],
        opsets=opsets,
    )


def test_contrib_op_uses_stored_value_info():
    model = fused_matmul_model()
    bare = onnx.ModelProto()
    bare.CopyFrom(model)
    del bare.graph.value_info[:]
    assert onnx_only_shape(bare, "mm") is None  # ONNX cannot infer a contrib op by itself
    assert onnx_only_shape(bare, "r") is None
    result = shapes_of(model)
    assert result.tensors["mm"].shape == (2, 4, 16)
    assert result.tensors["r"].shape == (2, 4, 16)
    assert result.tensors["y"].shape == (8, 16)


def test_stored_value_info_used_when_onnx_inference_raises():
    model = fused_matmul_model(import_contrib_domain=False)
    with pytest.raises(Exception):
        onnx.shape_inference.infer_shapes(model, strict_mode=False, data_prop=True)
    result = shapes_of(model)
    assert any("ONNX shape inference failed" in note for note in result.notes)
    assert result.tensors["mm"].shape == (2, 4, 16)
    assert result.tensors["r"].shape == (2, 4, 16)
    assert result.tensors["y"].shape == (8, 16)
    relu = next(r for r in analyze(model).nodes if r.op_type == "Relu")
    assert relu.status == "ok" and relu.output_shapes == [[2, 4, 16]]


def test_stale_stored_shapes_do_not_override_a_rebound_input():
    # Exported with a fixed batch of 1 and every shape stored; re-bound to batch 2, the Conv
    # output is [2,4,8,8] (ONNX alone would silently keep the stored [1,4,8,8]).
    model = conv_relu_model(input_dims=(1, 3, 8, 8))
    model.graph.value_info.append(helper.make_tensor_value_info("c", T.FLOAT, [1, 4, 8, 8]))
    del model.graph.output[:]
    model.graph.output.append(helper.make_tensor_value_info("y", T.FLOAT, [1, 4, 8, 8]))
    bind_inputs(model, [("x", (2, 3, 8, 8))])
    stored = [v.SerializeToString() for v in (*model.graph.value_info, *model.graph.output)]
    result = shapes_of(model)
    assert result.tensors["c"].shape == (2, 4, 8, 8)
    assert result.tensors["y"].shape == (2, 4, 8, 8)
    assert any("stored in the model differ" in note for note in result.notes)
    # the model's own stored shapes are put back after inference
    assert [v.SerializeToString() for v in (*model.graph.value_info, *model.graph.output)] == stored


# ---------------------------------------------------------------------------------------------
# Large constants are sized, never read


def large_constant_model():
    # Constant [100, 1000] (100,000 floats); MatMul(x [2,100], it) -> [2,1000]; Reshape -> [4,500].
    big = numpy_helper.from_array(np.zeros((100, 1000), np.float32), "big_value")
    small = numpy_helper.from_array(np.array([4, 500], np.int64), "small_value")
    nodes = [
        helper.make_node("Constant", [], ["big"], value=big),
        helper.make_node("Constant", [], ["small"], value=small),
        helper.make_node("MatMul", ["x", "big"], ["y"]),
        helper.make_node("Reshape", ["y", "small"], ["z"]),
    ]
    return make_model(nodes, [tensor_input("x", [2, 100])], [any_output("z")])


def test_large_constant_is_not_kept_as_a_value_but_its_shape_is_known():
    result = shapes_of(large_constant_model())
    assert 100_000 > MAX_VALUE_ELEMENTS
    assert "big" not in result.values
    assert result.tensors["big"].shape == (100, 1000)
    assert result.tensors["big"].dtype == T.FLOAT
    assert result.tensors["y"].shape == (2, 1000)
    assert result.values["small"].tolist() == [4, 500]  # small constants are read
    assert result.tensors["z"].shape == (4, 500)


def test_large_constant_sized_from_its_attribute_when_onnx_inference_fails():
    model = large_constant_model()
    model.graph.node.append(helper.make_node("FusedMatMul", ["z", "z"], ["extra"], domain="com.microsoft"))
    result = shapes_of(model)  # no com.microsoft opset import: ONNX's inference raises
    assert any("ONNX shape inference failed" in note for note in result.notes)
    assert "big" not in result.values
    assert result.tensors["big"].shape == (100, 1000)
    assert result.tensors["y"].shape == (2, 1000)


def test_inference_copy_leaves_large_weight_data_out():
    from onnxroof.frontend.shapes import WEIGHT_DATA_LIMIT, without_weight_data

    rows = WEIGHT_DATA_LIMIT // (4 * 1000) + 1  # just over the limit of inline float data
    model = helper.make_model(
        helper.make_graph(
            [helper.make_node("MatMul", ["x", "w"], ["y"])],
            "g",
            [helper.make_tensor_value_info("x", T.FLOAT, ["n", rows])],
            [helper.make_tensor_value_info("y", T.FLOAT, None)],
            [numpy_helper.from_array(np.zeros((rows, 1000), np.float32), "w")],
        )
    )
    light = without_weight_data(model)
    assert light.ByteSize() < 10_000 and list(light.graph.initializer[0].dims) == [rows, 1000]
    assert light.opset_import == model.opset_import
    analysis = analyze(model, dims={"n": 3})
    assert analysis.totals.macs == 3 * rows * 1000 and analysis.totals.param_bytes == rows * 1000 * 4


def test_node_names_are_unique_even_when_a_renamed_node_meets_another_nodes_name():
    # "a" repeats at index 2 and is renamed "a#2", which node 0 already carries: renamed again;
    # an unnamed Relu at index 3 is "Relu_3", which node 4 carries as its own name
    nodes = [helper.make_node("Relu", ["x"], ["y"], name=n) for n in ("a#2", "a", "a", "", "Relu_3")]
    assert node_names(nodes) == ["a#2", "a", "a#2#2", "Relu_3", "Relu_3#4"]
    assert node_names(read_node_fields(nodes)) == node_names(nodes)  # fields name nodes alike


def test_read_node_fields_holds_each_nodes_own_fields():
    nodes = [
        helper.make_node("Conv", ["x", "w", ""], ["y"], name="conv", kernel_shape=[3, 3], group=2),
        helper.make_node("Clip", ["y", "", "hi"], ["z"]),  # unnamed, a skipped optional input
        helper.make_node("MyOp", ["z"], ["u", "", "v"], name="mine", domain="my.domain"),
    ]
    conv, clip, mine = read_node_fields(nodes)
    assert conv == ("conv", "Conv", "", ["x", "w", ""], ["y"], conv.attributes)
    # make_node writes keyword attributes sorted by name
    assert [(a.name, list(a.ints), a.i) for a in conv.attributes] == [("group", [], 2), ("kernel_shape", [3, 3], 0)]
    assert list(conv.attributes) == list(nodes[0].attribute)
    assert (clip.name, clip.op_type, clip.domain, clip.inputs, clip.outputs) == ("", "Clip", "", ["y", "", "hi"], ["z"])
    assert clip.attributes == ()
    assert (mine.name, mine.op_type, mine.domain, mine.inputs, mine.outputs) == (
        "mine",
        "MyOp",
        "my.domain",
        ["z"],
        ["u", "", "v"],
    )
    assert all(
        type(value) is str for f in (conv, clip, mine) for value in (f.name, f.op_type, f.domain, *f.inputs, *f.outputs)
    )
