"""Per-family rules on one-node graphs: recurrent, Einsum, reductions, data movement, sampling,
signal, detection, the opset-23+ ops and the com.microsoft contrib ops. Every expected number
is worked out by hand in the test from the rule's documented formula."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import make_model, zeros
from onnx import TensorProto, helper

import onnxroof

F32, I64 = TensorProto.FLOAT, TensorProto.INT64
MS = "com.microsoft"


def run_node(op_type, inputs, *, outputs=1, opset=17, domain="", output_shapes=None, **attributes):
    """Analyse one node. ``inputs``: a shape (list) is a float32 activation, ``("int64", shape)`` an
    int64 activation, an ndarray a constant initializer, None an omitted optional input."""
    names, graph_inputs, initializers = [], [], []
    for index, item in enumerate(inputs):
        if item is None:
            names.append("")
        elif isinstance(item, np.ndarray):
            names.append(f"c{index}")
            initializers.append((f"c{index}", item))
        elif isinstance(item, tuple):
            names.append(f"x{index}")
            graph_inputs.append((f"x{index}", I64, item[1]))
        else:
            names.append(f"x{index}")
            graph_inputs.append((f"x{index}", F32, item))
    output_names = [f"y{i}" for i in range(outputs)]
    shapes = output_shapes or [None] * outputs
    node = helper.make_node(op_type, names, output_names, domain=domain, **attributes)
    model = make_model(
        [node], graph_inputs, [(n, F32, s) for n, s in zip(output_names, shapes)], initializers, opset=opset
    )
    model.ir_version = helper.find_min_ir_version_for(list(model.opset_import))
    if domain:
        model.opset_import.append(helper.make_opsetid(domain, 1))
    (record,) = onnxroof.analyze(model).nodes
    assert record.status == "ok", record.reason
    return record


# ---------------------------------------------------------------------------------- recurrent


def lstm(t, b, i, h, direction="forward", peepholes=False, **attributes):
    d = 2 if direction == "bidirectional" else 1
    inputs = [[t, b, i], zeros(d, 4 * h, i), zeros(d, 4 * h, h), zeros(d, 8 * h)]
    if peepholes:
        inputs += [None, None, None, zeros(d, 3 * h)]
    return run_node("LSTM", inputs, outputs=3, hidden_size=h, direction=direction, **attributes)


def test_lstm_forward_gate_macs_and_gate_flops():
    record = lstm(10, 1, 32, 64)
    # 10 steps x 4 gates x 64 units x (32 input + 64 recurrent) = 245,760 MACs
    assert record.macs == 10 * 4 * 64 * (32 + 64) == 245_760
    # per unit per step: 3 sigmoids x 3 + tanh (c~) + tanh (c) + 3 (f.c + i.c~) + 1 (o.tanh c) = 15
    assert record.flops == 2 * 245_760 + 15 * 10 * 64
    # W 256x32 + R 256x64 + B 512
    assert record.params == 256 * 32 + 256 * 64 + 512


def test_lstm_bidirectional_doubles_and_reverse_matches_forward():
    forward = lstm(10, 1, 32, 64)
    assert lstm(10, 1, 32, 64, direction="reverse").macs == forward.macs
    both = lstm(10, 1, 32, 64, direction="bidirectional")
    assert both.macs == 2 * 245_760
    assert both.flops == 2 * forward.flops


def test_lstm_batch_peepholes_and_clip():
    record = lstm(5, 3, 8, 16, peepholes=True)
    macs = 5 * 3 * 4 * 16 * (8 + 16)  # T x B x 4H x (I + H) = 23,040
    assert record.macs == macs
    # peepholes add p.c and its add on three gates: 15 + 6 = 21 per unit per step
    assert record.flops == 2 * macs + 21 * 5 * 3 * 16
    clipped = lstm(5, 3, 8, 16, clip=1.0)
    # clip is a min and a max on each of the 5 activation inputs: 15 + 10 = 25
    assert clipped.flops == 2 * macs + 25 * 5 * 3 * 16


def test_gru_three_gates():
    t, b, i, h = 5, 2, 16, 8
    inputs = [[t, b, i], zeros(1, 3 * h, i), zeros(1, 3 * h, h), zeros(1, 6 * h)]
    record = run_node("GRU", inputs, outputs=2, hidden_size=h)
    macs = t * b * 3 * h * (i + h)  # 10 steps x 24 x 24 = 5,760
    assert record.macs == macs == 5_760
    # 2 sigmoids x 3 + tanh + r.h multiply + (1 - z).h~ + z.h (4) = 12 per unit per step
    assert record.flops == 2 * macs + 12 * t * b * h
    before_reset = run_node("GRU", inputs, outputs=2, hidden_size=h, linear_before_reset=1)
    assert before_reset.flops == 2 * macs + 13 * t * b * h  # + the X.W + r.(h.R) add


def test_rnn_one_gate_and_known_sequence_lengths():
    t, b, i, h = 4, 3, 10, 20
    inputs = [[t, b, i], zeros(1, h, i), zeros(1, h, h)]
    record = run_node("RNN", inputs, outputs=2, hidden_size=h)
    assert record.macs == t * b * h * (i + h) == 7_200
    assert record.flops == 2 * 7_200 + 1 * t * b * h  # one tanh per unit per step
    lengths = np.array([3, 1, 2], dtype=np.int32)
    short = run_node("RNN", [*inputs, None, lengths], outputs=2, hidden_size=h)
    # only 3 + 1 + 2 = 6 of the 12 steps run; sequence_lens is a setting, not a parameter
    assert short.macs == 6 * h * (i + h) == 3_600
    assert short.params == h * i + h * h


def test_rnn_layout_1_reads_batch_first():
    t, b, i, h = 4, 3, 10, 20
    record = run_node("RNN", [[b, t, i], zeros(1, h, i), zeros(1, h, h)], outputs=2, hidden_size=h, layout=1, opset=14)
    assert record.macs == t * b * h * (i + h)


def test_linear_attention_recurrence():
    b, t, heads, d = 1, 6, 2, 4  # q, k, v: [1, 6, 2 x 4]
    record = run_node(
        "LinearAttention",
        [[b, t, heads * d]] * 3,
        outputs=2,
        opset=27,
        q_num_heads=heads,
        kv_num_heads=heads,
        update_rule="linear",
    )
    # per token: state update 2 x 4 x 4 + readout 2 x 4 x 4 = 64 MACs; scale 2 x 4 = 8 FLOPs
    assert record.macs == 6 * 64
    assert record.flops == 2 * 6 * 64 + 6 * 8


# ------------------------------------------------------------------------------------- Einsum


@pytest.mark.parametrize(
    "equation, shapes, macs",
    [
        ("bij,bjk->bik", [[2, 3, 4], [2, 4, 5]], 2 * 3 * 4 * 5),  # product of every label's size
        ("bhqd,bhkd->bhqk", [[1, 2, 8, 16], [1, 2, 6, 16]], 1 * 2 * 8 * 6 * 16),  # attention scores
        ("...ij,...jk->...ik", [[2, 3, 4, 5], [3, 5, 6]], 2 * 3 * 4 * 5 * 6),  # ellipsis broadcasts 3 against 2x3
        ("ij,jk", [[3, 4], [4, 5]], 3 * 4 * 5),  # implicit output: ik
        ("i,i->", [[7], [7]], 7),  # dot product
    ],
)
def test_einsum_two_operands(equation, shapes, macs):
    record = run_node("Einsum", shapes, equation=equation)
    assert record.macs == macs and record.flops == 2 * macs


def test_einsum_three_operands_pairwise_left_to_right():
    # ij,jk -> ik (j used up): 2 x 3 x 4 = 24; ik,kl -> il: 2 x 4 x 5 = 40. Not 2 x 3 x 4 x 5 = 120.
    record = run_node("Einsum", [[2, 3], [3, 4], [4, 5]], equation="ij,jk,kl->il")
    assert record.macs == 24 + 40


def test_einsum_one_sided_label_is_summed_before_the_product():
    # k appears only in the second operand and not in the output: summed first, 3 x 4 - 3 = 9 adds,
    # then ij,j->i is 2 x 3 = 6 MACs (onnxruntime's order)
    record = run_node("Einsum", [[2, 3], [3, 4]], equation="ij,jk->i")
    assert record.macs == 6 and record.flops == 2 * 6 + 9


def test_einsum_single_operand_reduce_and_transpose():
    assert run_node("Einsum", [[3, 4]], equation="ij->i").flops == 12 - 3
    transpose = run_node("Einsum", [[3, 4]], equation="ij->ji")
    assert transpose.flops == 0 and transpose.input_bytes == transpose.output_bytes == 48


# ---------------------------------------------------------------------------------- reductions


def test_reduce_sum_counts_n_minus_one_per_output_and_axes_are_not_parameters():
    axes = np.array([1], dtype=np.int64)
    record = run_node("ReduceSum", [[2, 3, 4], axes], opset=18)
    # 24 inputs into 8 outputs: 8 x (3 - 1) = 16 adds
    assert record.flops == 24 - 8 and record.params == 0


def test_reduce_mean_over_the_plane_equals_global_average_pool():
    axes = np.array([2, 3], dtype=np.int64)
    mean = run_node("ReduceMean", [[1, 4, 6, 6], axes], opset=18)
    gap = run_node("GlobalAveragePool", [[1, 4, 6, 6]])
    # 4 outputs x (35 adds + 1 divide) = 144
    assert mean.flops == gap.flops == 144


@pytest.mark.parametrize(
    "op, flops",
    [
        ("ReduceMax", 60 - 12),  # in - out comparisons
        ("ReduceL1", 2 * 60 - 12),  # abs per input + adds
        ("ReduceSumSquare", 2 * 60 - 12),  # square per input + adds
        ("ReduceL2", 2 * 60),  # square + adds (in - out) + sqrt per output
        ("ReduceLogSum", 60),  # adds + log per output
        ("ReduceLogSumExp", 4 * 60),  # max, subtract, exp, sum, log, add back
    ],
)
def test_reduction_table(op, flops):
    # [3, 4, 5] reduced over the last axis: 60 inputs, 12 outputs
    record = run_node(op, [[3, 4, 5], np.array([-1], dtype=np.int64)], opset=18)
    assert record.flops == flops


def test_argmax_topk_cumsum():
    assert run_node("ArgMax", [[3, 4, 5]], axis=2).flops == 60 - 12
    k = np.array([2], dtype=np.int64)
    topk = run_node("TopK", [[3, 8], k], outputs=2)
    # 3 rows x 8 values x (1 + ceil(log2 2)) heap comparisons; K is a setting
    assert topk.flops == 3 * 8 * 2 and topk.params == 0
    assert run_node("CumSum", [[3, 4], np.array(1, dtype=np.int64)]).flops == 12


def test_softmax_cross_entropy_loss():
    labels = ("int64", [4])
    record = run_node("SoftmaxCrossEntropyLoss", [[4, 10], labels], reduction="mean")
    # log-softmax 6 x 40 scores; 4 targets: negate each (4) + mean (3 adds + 1 divide = 4)
    assert record.flops == 6 * 40 + 4 + 4


# ----------------------------------------------------------------------- data movement: bytes


def test_resize_nearest_moves_bytes_only_and_linear_counts_taps():
    scales = np.array([1, 1, 2, 2], dtype=np.float32)
    nearest = run_node("Resize", [[1, 3, 8, 8], None, scales], mode="nearest")
    # reads 1 x 3 x 8 x 8 floats, writes 1 x 3 x 16 x 16; scales is a setting, not a parameter
    assert nearest.flops == 0 and nearest.params == 0
    assert nearest.input_bytes == 192 * 4 and nearest.output_bytes == 768 * 4
    linear = run_node("Resize", [[1, 3, 8, 8], None, scales], mode="linear")
    # bilinear: 4 taps = 4 multiplies + 3 adds per output
    assert linear.flops == 7 * 768 and linear.output_bytes == 768 * 4
    cubic = run_node("Resize", [[1, 3, 8, 8], None, scales], mode="cubic")
    assert cubic.flops == (2 * 16 - 1) * 768  # 4 x 4 taps
    half = np.array([1, 1, 0.5, 0.5], dtype=np.float32)
    antialiased = run_node("Resize", [[1, 3, 8, 8], None, half], mode="linear", antialias=1, opset=18)
    # downscaling 8 -> 4 widens each axis' filter to 2 x 8/4 = 4 taps: 16 taps, 31 FLOPs per output
    assert antialiased.flops == 31 * (3 * 4 * 4)


def test_pad_bytes():
    pads = np.array([0, 0, 1, 1, 0, 0, 1, 1], dtype=np.int64)
    record = run_node("Pad", [[1, 3, 4, 4], pads])
    # [1, 3, 4, 4] -> [1, 3, 6, 6]: 48 floats in, 108 out; pads is a setting
    assert record.flops == 0 and record.params == 0
    assert record.input_bytes == 48 * 4 and record.output_bytes == 108 * 4


def test_gather_bytes_embedding_table_is_a_parameter():
    table = zeros(100, 16)
    node = helper.make_node("Gather", ["table", "ids"], ["y"])
    model = make_model([node], [("ids", I64, [2, 5])], [("y", F32, None)], [("table", table)])
    (record,) = onnxroof.analyze(model).nodes
    assert record.flops == 0
    # the whole table is a parameter, but the lookup reads only the 10 gathered rows of 16 floats
    assert record.params == 1600 and record.weight_bytes == 10 * 16 * 4
    assert onnxroof.analyze(model).totals.param_bytes == 1600 * 4
    # reads 10 int64 ids, writes 2 x 5 x 16 floats
    assert record.input_bytes == 10 * 8 and record.output_bytes == 160 * 4


def test_slice_expand_tile_bytes():
    starts, ends = np.array([0], dtype=np.int64), np.array([5], dtype=np.int64)
    axes = np.array([1], dtype=np.int64)
    sliced = run_node("Slice", [[4, 10], starts, ends, axes])
    assert sliced.flops == 0 and sliced.params == 0
    assert sliced.input_bytes == 40 * 4 and sliced.output_bytes == 20 * 4
    expanded = run_node("Expand", [[3, 1], np.array([3, 4], dtype=np.int64)])
    assert expanded.input_bytes == 3 * 4 and expanded.output_bytes == 12 * 4
    tiled = run_node("Tile", [[2, 3], np.array([2, 2], dtype=np.int64)])
    assert tiled.input_bytes == 6 * 4 and tiled.output_bytes == 24 * 4


def test_scatter_with_reduction_counts_one_op_per_update():
    indices = np.array([[0, 1]], dtype=np.int64)
    plain = run_node("ScatterElements", [[3, 4], indices, [1, 2]], axis=0)
    assert plain.flops == 0
    added = run_node("ScatterElements", [[3, 4], indices, [1, 2]], axis=0, reduction="add", opset=18)
    assert added.flops == 2


def test_views_move_nothing():
    bitcast = run_node("BitCast", [[4, 4]], opset=26, to=TensorProto.INT32)
    assert bitcast.view and bitcast.input_bytes == bitcast.output_bytes == 0


# ----------------------------------------------------------------------- sampling and regions


def test_grid_sample_and_affine_grid():
    # 2-D bilinear: 7 per output value + 2 per grid coordinate
    sample = run_node("GridSample", [[1, 3, 8, 8], [1, 4, 5, 2]], opset=20)
    assert sample.flops == 7 * (3 * 4 * 5) + 2 * (4 * 5 * 2)
    size = np.array([2, 3, 4, 5], dtype=np.int64)
    grid = run_node("AffineGrid", [[2, 2, 3], size], opset=20)
    # output [2, 4, 5, 2]: each coordinate a row of theta (3) times (x, y, 1)
    assert grid.macs == 2 * 4 * 5 * 2 * 3 and grid.params == 0


def test_roi_align_fixed_sampling():
    rois, batch_indices = [3, 4], ("int64", [3])
    record = run_node(
        "RoiAlign", [[1, 4, 16, 16], rois, batch_indices], output_height=2, output_width=2, sampling_ratio=2
    )
    # 3 x 4 x 2 x 2 = 48 outputs, each 2 x 2 bilinear samples (7) averaged (4)
    assert record.flops == 48 * (4 * 7 + 4)


def test_non_max_suppression_worst_case():
    record = run_node("NonMaxSuppression", [[1, 4, 4], [1, 2, 4]])
    # per class: 4 score compares + 4 x 2 sort + 13 x 6 pairs = 90; two classes; areas 3 x 4 boxes
    assert record.flops == 2 * (4 + 8 + 13 * 6) + 12


def test_deform_conv():
    w = zeros(4, 2, 3, 3)
    record = run_node("DeformConv", [[1, 2, 6, 6], w, [1, 18, 4, 4]], opset=19)
    # as Conv: 4 x 16 x 2 x 9 = 1,152 MACs; 288 offset adds; 2 x 16 x 9 = 288 samples x 7 (bilinear)
    assert record.macs == 1_152
    assert record.flops == 2 * 1_152 + 288 + 7 * 288


# ------------------------------------------------------------------------- signal, linear algebra


def test_dft_fft_and_direct():
    fft = run_node("DFT", [[2, 16, 1]], opset=17, axis=1)
    # 2 transforms of N = 16 (a power of two): 5 x 16 x log2 16 = 320 each
    assert fft.flops == 2 * 320
    direct = run_node("DFT", [[2, 12, 2]], opset=17, axis=1)
    # N = 12: the direct sum, 12 bins x 12 samples x 8 FLOPs per complex multiply-add
    assert direct.flops == 2 * 8 * 12 * 12


def test_det_lu():
    record = run_node("Det", [[5, 3, 3]])
    # per 3x3: row-update MACs (2)^2 + (1)^2 = 5 = 2 x 3 x 5 / 6; FLOPs 3^2 - 1 = 8
    assert record.macs == 5 * 5 and record.flops == 2 * 25 + 5 * 8


def test_hann_window_is_counted_per_sample_and_folded_when_constant():
    record = run_node("HannWindow", [("int64", [])], opset=17, output_shapes=[[8]])
    assert record.flops == 4 * 8  # θ, cos, multiply, subtract per sample
    node = helper.make_node("HannWindow", ["size"], ["window"])
    model = make_model([node], [], [("window", F32, None)], [("size", np.array(8, dtype=np.int64))])
    (folded,) = onnxroof.analyze(model).nodes
    assert folded.status == "constant" and folded.flops == 0  # a constant window is a parameter


# --------------------------------------------------------------------------- opset 23+ ops


def test_swish_swiglu_gelu_tanh():
    assert run_node("Swish", [[2, 8]], opset=24).flops == 5 * 16  # alpha.x, sigmoid (3), multiply
    assert run_node("SwiGLU", [[2, 8], [2, 8]], opset=28).flops == 6 * 16  # Swish(A) x B
    assert run_node("Gelu", [[2, 8]], opset=20).flops == 5 * 16  # 0.5.x.(1 + erf(x/sqrt 2))
    assert run_node("Gelu", [[2, 8]], opset=20, approximate="tanh").flops == 9 * 16


def test_causal_conv_with_state_and_tensor_scatter():
    conv = run_node("CausalConvWithState", [[2, 4, 8], zeros(4, 1, 3)], outputs=2, opset=27, activation="silu")
    # depthwise: 2 x 4 x 8 outputs x 3 taps; SiLU = sigmoid (3) + multiply per output
    assert conv.macs == 64 * 3 and conv.flops == 2 * 192 + 4 * 64 and conv.params == 12
    cache = run_node("TensorScatter", [[1, 2, 16, 4], [1, 2, 3, 4]], opset=24)
    assert cache.flops == 0 and cache.input_bytes == (128 + 24) * 4 and cache.output_bytes == 128 * 4


def test_random_and_string_ops_are_zero_with_a_reason():
    record = run_node("RandomNormalLike", [[3, 4]])
    assert record.flops == 0 and "random" in record.formula and record.output_bytes == 48


# ------------------------------------------------------------------------- com.microsoft contrib


@pytest.mark.parametrize(
    "attributes, a_shape, b_shape, macs",
    [
        ({}, [2, 3, 8], [2, 8, 5], 2 * 3 * 8 * 5),
        ({"transA": 1}, [2, 8, 3], [2, 8, 5], 2 * 3 * 8 * 5),  # A read as [2, 3, 8]
        ({"transB": 1, "alpha": 0.125}, [2, 3, 8], [2, 5, 8], 2 * 3 * 8 * 5),  # alpha is the GEMM's scale
        ({"transBatchA": 1}, [4, 2, 6], [2, 6, 5], 2 * 4 * 6 * 5),  # A [4, 2, 6] read as [2, 4, 6]
    ],
)
def test_fused_matmul(attributes, a_shape, b_shape, macs):
    record = run_node("FusedMatMul", [a_shape, b_shape], domain=MS, output_shapes=[None], **attributes)
    assert record.macs == macs and record.flops == 2 * macs
    assert run_node("TransposeMatMul", [a_shape, b_shape], domain=MS, **attributes).macs == macs  # same kernel


def test_contrib_gelu_family():
    shape = [2, 10]  # 20 elements
    assert run_node("Gelu", [shape], domain=MS).flops == 5 * 20  # exact (erf) Gelu
    assert run_node("FastGelu", [shape], domain=MS).flops == 9 * 20  # tanh approximation
    assert run_node("FastGelu", [shape, [10]], domain=MS).flops == 10 * 20  # + bias add
    assert run_node("BiasGelu", [shape, [10]], domain=MS).flops == 6 * 20
    assert run_node("QuickGelu", [shape], domain=MS, alpha=1.702).flops == 5 * 20
    assert run_node("BiasAdd", [[1, 4, 10], [10], [1, 4, 10]], domain=MS).flops == 2 * 40
    assert run_node("BiasSoftmax", [[2, 4, 10], [2, 1, 10]], domain=MS, axis=-1, is_inner_broadcast=0).flops == 6 * 80
