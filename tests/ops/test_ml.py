"""ai.onnx.ml rules (onnxroof/ops/ml.py) on small skl2onnx-like graphs; every figure derived by hand."""

from __future__ import annotations

import onnx
import onnx.defs
import pytest
from onnx import TensorProto, helper

import onnxroof
from onnxroof.core.tensors import TensorInfo
from onnxroof.ops import NodeView, UnknownShape, output_types, rule_for

ML = "ai.onnx.ml"
F = TensorProto.FLOAT


def analyse(node, inputs, outputs, ml_opset=3):
    graph = helper.make_graph(
        [node],
        "ml",
        [helper.make_tensor_value_info(*i) for i in inputs],
        [helper.make_tensor_value_info(*o) for o in outputs],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(ML, ml_opset)])
    model.ir_version = 8
    analysis = onnxroof.analyze(model)
    (record,) = analysis.nodes
    assert record.status == "ok", record.reason
    return record, analysis


# Two trees over 3 features. Tree 0, depth 2: 0 -> (1, leaf 2), 1 -> (leaf 3, leaf 4): 2 branches,
# 3 leaves. Tree 1, depth 3: 0 -> (1, leaf 2), 1 -> (3, leaf 4), 3 -> (leaf 5, leaf 6): 3 branches,
# 4 leaves. 12 nodes: 5 branches, 7 leaves.
TREES = [  # (tree, node, mode, true, false)
    (0, 0, "BRANCH_LEQ", 1, 2),
    (0, 1, "BRANCH_LEQ", 3, 4),
    (0, 2, "LEAF", 0, 0),
    (0, 3, "LEAF", 0, 0),
    (0, 4, "LEAF", 0, 0),
    (1, 0, "BRANCH_LEQ", 1, 2),
    (1, 1, "BRANCH_LEQ", 3, 4),
    (1, 2, "LEAF", 0, 0),
    (1, 3, "BRANCH_LEQ", 5, 6),
    (1, 4, "LEAF", 0, 0),
    (1, 5, "LEAF", 0, 0),
    (1, 6, "LEAF", 0, 0),
]
LEAVES = [(t, n) for t, n, mode, _, _ in TREES if mode == "LEAF"]


def tree_attributes():
    return dict(
        nodes_treeids=[t[0] for t in TREES],
        nodes_nodeids=[t[1] for t in TREES],
        nodes_modes=[t[2] for t in TREES],
        nodes_truenodeids=[t[3] for t in TREES],
        nodes_falsenodeids=[t[4] for t in TREES],
        nodes_featureids=[k % 3 for k in range(len(TREES))],
        nodes_values=[0.5] * len(TREES),
    )


def test_tree_ensemble_regressor():
    # N = 4 rows: comparisons 4 x (2 + 3) = 20, aggregation 4 x 2 trees x 1 target = 8: 28 FLOPs.
    # Params: 5 branch thresholds (the 7 leaf placeholders in nodes_values not counted) + 7 target
    # weights + 1 base value = 13.
    node = helper.make_node(
        "TreeEnsembleRegressor",
        ["X"],
        ["Y"],
        domain=ML,
        n_targets=1,
        **tree_attributes(),
        target_treeids=[t for t, _ in LEAVES],
        target_nodeids=[n for _, n in LEAVES],
        target_ids=[0] * 7,
        target_weights=[1.0] * 7,
        base_values=[0.5],
    )
    record, analysis = analyse(node, [("X", F, [4, 3])], [("Y", F, [4, 1])])
    assert (record.macs, record.flops, record.params) == (0, 28, 13)
    assert analysis.totals.params == 13


def test_tree_ensemble_classifier_softmax():
    # 3 classes, N = 2: 2 x (5 comparisons + 2 trees x 3 classes) = 22, softmax 5 x 2 x 3 = 30: 52.
    # Params: 5 thresholds + 7 leaves x 3 class weights = 26.
    node = helper.make_node(
        "TreeEnsembleClassifier",
        ["X"],
        ["label", "P"],
        domain=ML,
        **tree_attributes(),
        classlabels_int64s=[0, 1, 2],
        post_transform="SOFTMAX",
        class_treeids=[t for t, _ in LEAVES for _ in range(3)],
        class_nodeids=[n for _, n in LEAVES for _ in range(3)],
        class_ids=[c for _ in LEAVES for c in range(3)],
        class_weights=[0.1] * 21,
    )
    record, _ = analyse(node, [("X", F, [2, 3])], [("label", TensorProto.INT64, [2]), ("P", F, [2, 3])])
    assert (record.macs, record.flops, record.params) == (0, 52, 26)


def test_tree_ensemble_opset5_layout():
    # The same two trees in TreeEnsemble's layout: branch nodes only (5), children index branch
    # nodes or, where the leaf flag is set, the 7 leaves. Tree 0: n0 -> (n1, leaf 0), n1 -> (leaf 1,
    # leaf 2); tree 1: n2 -> (n3, leaf 3), n3 -> (n4, leaf 4), n4 -> (leaf 5, leaf 6).
    # N = 4: 4 x (2 + 3 + 2 x 1) = 28 FLOPs; params 5 splits + 7 leaf weights = 12.
    node = helper.make_node(
        "TreeEnsemble",
        ["X"],
        ["Y"],
        domain=ML,
        n_targets=1,
        tree_roots=[0, 2],
        nodes_featureids=[0, 1, 2, 0, 1],
        nodes_splits=helper.make_tensor("s", F, [5], [0.5] * 5),
        nodes_modes=helper.make_tensor("m", TensorProto.UINT8, [5], [0] * 5),
        nodes_truenodeids=[1, 1, 3, 4, 5],
        nodes_trueleafs=[0, 1, 0, 0, 1],
        nodes_falsenodeids=[0, 2, 3, 4, 6],
        nodes_falseleafs=[1, 1, 1, 1, 1],
        leaf_targetids=[0] * 7,
        leaf_weights=helper.make_tensor("w", F, [7], [1.0] * 7),
    )
    record, _ = analyse(node, [("X", F, [4, 3])], [("Y", F, [4, 1])], ml_opset=5)
    assert (record.macs, record.flops, record.params) == (0, 28, 12)


def test_linear_classifier():
    # F = 20, C = 3, N = 1: 60 MACs (120 MAC-FLOPs) + softmax 5 x 3 = 15: 135 FLOPs; params 60 + 3.
    node = helper.make_node(
        "LinearClassifier",
        ["X"],
        ["label", "P"],
        domain=ML,
        coefficients=[0.1] * 60,
        intercepts=[0.0] * 3,
        classlabels_ints=[0, 1, 2],
        multi_class=1,
        post_transform="SOFTMAX",
    )
    record, analysis = analyse(node, [("X", F, [1, 20])], [("label", TensorProto.INT64, [1]), ("P", F, [1, 3])])
    assert (record.macs, record.flops, record.params) == (60, 135, 63)
    assert (analysis.totals.macs, analysis.totals.params) == (60, 63)


def test_linear_regressor():
    # F = 20, 2 targets, N = 5: 5 x 20 x 2 = 200 MACs, no post transform; params 40 + 2.
    node = helper.make_node(
        "LinearRegressor", ["X"], ["Y"], domain=ML, coefficients=[0.1] * 40, intercepts=[0.0, 1.0], targets=2
    )
    record, _ = analyse(node, [("X", F, [5, 20])], [("Y", F, [5, 2])])
    assert (record.macs, record.flops, record.params) == (200, 400, 42)


def test_scaler_and_normalizer():
    # Scaler on [2, 5]: 2 x 10 = 20 FLOPs; params 5 offsets + 5 scales.
    node = helper.make_node("Scaler", ["X"], ["Y"], domain=ML, offset=[0.0] * 5, scale=[1.0] * 5)
    record, _ = analyse(node, [("X", F, [2, 5])], [("Y", F, [2, 5])])
    assert (record.macs, record.flops, record.params) == (0, 20, 10)
    # Normalizer L2 on [2, 3]: 3 x 6 + 2 sqrt = 20; L1: 3 x 6 = 18; MAX: 2 x 6 = 12.
    for norm, flops in (("L2", 20), ("L1", 18), ("MAX", 12)):
        node = helper.make_node("Normalizer", ["X"], ["Y"], domain=ML, norm=norm)
        record, _ = analyse(node, [("X", F, [2, 3])], [("Y", F, [2, 3])])
        assert (record.flops, record.params) == (flops, 0), norm


SVM_VECTORS = dict(support_vectors=[0.1] * 20, rho=[0.0])  # 5 support vectors of F = 4


def test_svm_classifier_rbf():
    # 2 classes, vectors_per_class [2, 3]: SV = 5, F = 4, N = 1. MACs: kernel 5 x 4 = 20 + dual
    # 5 x (2 - 1) = 5: 25 (50 MAC-FLOPs). RBF: 5 x (4 subtracts + multiply + exp) = 30; 1 pair x
    # (add rho, vote) = 2: 82 FLOPs. Params 20 + 5 coefficients + 1 rho = 26.
    node = helper.make_node(
        "SVMClassifier",
        ["X"],
        ["label", "S"],
        domain=ML,
        classlabels_ints=[0, 1],
        vectors_per_class=[2, 3],
        coefficients=[1.0] * 5,
        kernel_type="RBF",
        kernel_params=[0.5, 0.0, 3.0],
        **SVM_VECTORS,
    )
    record, _ = analyse(node, [("X", F, [1, 4])], [("label", TensorProto.INT64, [1]), ("S", F, [1, 2])])
    assert (record.macs, record.flops, record.params) == (25, 82, 26)


def test_svm_regressor_linear_kernel():
    # n_supports 5, F = 4, N = 1: 20 + 5 = 25 MACs; + 1 (add rho): 51 FLOPs; params 20 + 5 + 1.
    node = helper.make_node(
        "SVMRegressor",
        ["X"],
        ["Y"],
        domain=ML,
        n_supports=5,
        coefficients=[1.0] * 5,
        kernel_type="LINEAR",
        kernel_params=[0.5, 0.0, 3.0],
        **SVM_VECTORS,
    )
    record, _ = analyse(node, [("X", F, [1, 4])], [("Y", F, [1, 1])])
    assert (record.macs, record.flops, record.params) == (25, 51, 26)


def test_lookups_count_their_tables():
    # LabelEncoder: 3 keys + 3 values stored, no FLOPs; ArrayFeatureExtractor, ZipMap: nothing.
    node = helper.make_node("LabelEncoder", ["X"], ["Y"], domain=ML, keys_int64s=[1, 2, 3], values_int64s=[4, 5, 6])
    record, _ = analyse(node, [("X", TensorProto.INT64, [2, 4])], [("Y", TensorProto.INT64, [2, 4])], ml_opset=2)
    assert (record.flops, record.params) == (0, 6)


ML_OPS = sorted({s.name for s in onnx.defs.get_all_schemas_with_history() if s.domain == ML})


@pytest.mark.parametrize("op", ML_OPS)
def test_every_ml_op_has_a_rule_that_never_crashes(op):
    """A rule for each ai.onnx.ml schema; on a node without attributes it counts or says the shape
    is unknown, never fails otherwise."""
    rule = rule_for(ML, op)
    assert rule is not None and rule.formula
    for shape in ((3, 4), (4,), None):
        info = TensorInfo("X", F, shape)
        view = NodeView(helper.make_node(op, ["X"], ["Y"], domain=ML), (info,), (TensorInfo("Y"),))
        try:
            cost = rule.handler(view)
        except UnknownShape:
            assert shape is None
            continue
        assert cost.macs >= 0 and cost.flops >= 0 and cost.attribute_params == 0


def test_shape_rules_for_what_onnx_leaves_unknown():
    """What the rules say the outputs are, for the ops onnx infers no shape for (used once the shape
    stage asks ai.onnx.ml rules too)."""

    def shapes(node, *inputs):
        return [None if t is None else (t.dtype, t.shape) for t in output_types(node, inputs, {})]

    x = TensorInfo("X", F, (2, 20))
    assert shapes(helper.make_node("Scaler", ["X"], ["Y"], domain=ML, offset=[0.0], scale=[1.0]), x) == [(F, (2, 20))]
    svm = helper.make_node(
        "SVMClassifier", ["X"], ["L", "S"], domain=ML, classlabels_ints=[0, 1, 2], vectors_per_class=[1, 1, 1]
    )
    assert shapes(svm, x) == [(TensorProto.INT64, (2,)), (F, (2, 3))]
    # skl2onnx's KNN: a 1-D table of 400 labels gathered by [1, 5] indices gives [1, 5]
    afe = helper.make_node("ArrayFeatureExtractor", ["T", "I"], ["Z"], domain=ML)
    assert shapes(afe, TensorInfo("T", TensorProto.INT64, (400,)), TensorInfo("I", TensorProto.INT64, (1, 5))) == [
        (TensorProto.INT64, (1, 5))
    ]
    lin = helper.make_node(
        "LinearClassifier", ["X"], ["L", "P"], domain=ML, coefficients=[0.0] * 60, classlabels_ints=[0, 1, 2]
    )
    assert shapes(lin, x) == [(TensorProto.INT64, (2,)), (F, (2, 3))]
