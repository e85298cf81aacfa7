"""Traditional ML ops (the ``ai.onnx.ml`` domain, what skl2onnx emits).

These ops keep their model in attributes (coefficients, tree thresholds, support vectors), not
in initializers: each rule reports those numbers as ``attribute_params`` (parameters of the node,
read on every run at 4 bytes a number, as onnxruntime's kernels hold them in float32). N is the number of rows
(the product of input 0's leading dims; 1 for a 1-D input), F the features (its last dim), C the
classes or targets. Conventions:

- products of an input with stored coefficients are MACs (linear models, SVM kernels and dual
  coefficients); everything else counts 1 per arithmetic operation or comparison, as elsewhere;
- post_transform, per output score: NONE 0, SOFTMAX / SOFTMAX_ZERO 5 (max, subtract, exp, sum,
  divide, as Softmax), LOGISTIC 4 (exp, add, divide, and the sign select of the stable form
  1 / (1 + exp(-|x|))), PROBIT 4 (2x - 1, erfinv, multiply by sqrt 2);
- a label chosen from the scores (argmax, vote) is not counted;
- trees: comparisons per sample = the sum over trees of the tree's maximum depth, an upper bound
  on the nodes a sample visits (1 FLOP per comparison), + 1 add per tree per output; no MACs.
  Thresholds count the branch nodes only (leaf placeholders of the v1/v3 layout excluded), then
  leaf weights and base values; ids and child links are structure, not parameters;
- class labels, key names of maps and scalar settings (a kernel's gamma, a threshold) are not
  parameters; lookup tables (LabelEncoder keys and values, categories) are.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from math import prod
from typing import cast

from onnx import TensorProto

from .base import NodeView, OpCost, OutputType, ShapeHandler, register, zero_cost

ML = "ai.onnx.ml"

# post_transform -> FLOPs per output score; TreeEnsemble (opset 5) numbers them 0..4
POST_TRANSFORM_FLOPS = {"NONE": 0, "SOFTMAX": 5, "SOFTMAX_ZERO": 5, "LOGISTIC": 4, "PROBIT": 4}
_POST_TRANSFORM_NAMES = ("NONE", "SOFTMAX", "SOFTMAX_ZERO", "LOGISTIC", "PROBIT")


def count(node: NodeView, *names: str) -> int:
    """Numbers stored in the attributes ``names`` (lists, or tensors for the ``*_as_tensor`` forms)."""
    total = 0
    for name in names:
        for attribute in (name, f"{name}_as_tensor"):
            value = node.attr(attribute)
            if isinstance(value, TensorProto):
                total += prod(value.dims)
            elif isinstance(value, (list, tuple)):
                total += len(value)
    return total


def rows_features(node: NodeView) -> tuple[int, int]:
    """(N, F) of input 0: [F] is one row; [.., F] has prod(leading dims) rows."""
    shape = node.input_shape(0)
    if not shape:
        return 1, 1
    return prod(shape[:-1]), shape[-1]


def post_transform(node: NodeView, scores: int) -> tuple[int, str]:
    """(FLOPs, text) of the node's post_transform over ``scores`` output scores."""
    name = node.attr("post_transform", "NONE")
    if isinstance(name, int):
        name = _POST_TRANSFORM_NAMES[name] if 0 <= name < len(_POST_TRANSFORM_NAMES) else "NONE"
    per = POST_TRANSFORM_FLOPS.get(name, 0)
    return per * scores, f"{name} {per}·{scores:,} scores"


def classes(node: NodeView) -> int:
    return count(node, "classlabels_ints", "classlabels_int64s", "classlabels_strings")


# -- linear models ------------------------------------------------------------------------------


def linear(node: NodeView) -> OpCost:
    """MACs = N x F x C (C = coefficients / F: classes or targets); FLOPs = post_transform per
    output score (N x C: SOFTMAX 5, LOGISTIC 4, PROBIT 4, NONE 0; the label's argmax not
    counted); attribute params = coefficients + intercepts (LinearClassifier, LinearRegressor)."""
    n, f = rows_features(node)
    coefficients = count(node, "coefficients")
    c = max(coefficients // f, 1) if f else 0
    macs = n * f * c
    flops, post = post_transform(node, n * c)
    params = coefficients + count(node, "intercepts")
    return OpCost(
        macs=macs,
        flops=flops,
        attribute_params=params,
        formula=f"N·F·C = {n}·{f}·{c} = {macs:,} MACs; {post}; {params:,} stored numbers",
    )


# -- per-element preprocessing ------------------------------------------------------------------


def per_element(flops_per_element: int, rule: str, *tables: str):
    """A rule counting ``flops_per_element`` per element of input 0, with the attributes ``tables``
    as parameters."""

    def handler(node: NodeView) -> OpCost:
        elements = node.input_elements(0)
        flops = flops_per_element * elements
        params = count(node, *tables)
        return OpCost(
            flops=flops,
            attribute_params=params,
            formula=f"{flops_per_element}·{elements:,} elements = {flops:,} FLOPs ({rule}); {params:,} stored numbers",
        )

    stored = " + ".join(tables) if tables else "0"
    handler.__doc__ = f"FLOPs = {flops_per_element} x input elements ({rule}); attribute params = {stored}"
    return handler


NORMALIZER_FLOPS = {
    "MAX": (2, "running max, divide"),
    "L1": (3, "abs, add, divide"),
    "L2": (3, "square, add, divide; + 1 sqrt per row"),
}


def normalizer(node: NodeView) -> OpCost:
    """FLOPs per element: MAX 2 (running max, divide), L1 3 (abs, add, divide), L2 3 (square,
    add, divide) + 1 sqrt per row; no parameters."""
    norm = node.attr("norm", "MAX")
    per, rule = NORMALIZER_FLOPS.get(norm, NORMALIZER_FLOPS["MAX"])
    n, _ = rows_features(node)
    elements = node.input_elements(0)
    flops = per * elements + (n if norm == "L2" else 0)
    return OpCost(
        flops=flops,
        formula=f"{norm}: {per}·{elements:,} elements{f' + {n} sqrt' if norm == 'L2' else ''}"
        f" = {flops:,} FLOPs ({rule})",
    )


def lookup(what: str, *tables: str):
    """A rule for a table lookup or data movement: 0 FLOPs, the attributes ``tables`` as parameters."""

    def handler(node: NodeView) -> OpCost:
        params = count(node, *tables)
        return OpCost(attribute_params=params, formula=f"0 FLOPs: {what}; {params:,} stored numbers")

    handler.__doc__ = f"FLOPs = 0: {what}; attribute params = {' + '.join(tables)}"
    return handler


# -- trees --------------------------------------------------------------------------------------


def max_depths(
    roots: Sequence[int],
    true_ids: Sequence[int],
    false_ids: Sequence[int],
    true_leaf: Sequence[bool],
    false_leaf: Sequence[bool],
) -> list[int]:
    """The maximum depth (comparisons on the longest root-to-leaf path) of each tree, nodes given
    as flat arrays: node i's children are true_ids[i] and false_ids[i], a leaf where the flag says
    so. A cycle (a malformed model) stops at the node met again."""
    depth: dict[int, int] = {}

    def walk(root: int) -> int:
        stack, path = [(root, False)], set()
        while stack:
            i, done = stack.pop()
            if done:
                path.discard(i)
                depth[i] = 1 + max(
                    0 if leaf else depth.get(child, 0)
                    for child, leaf in ((true_ids[i], true_leaf[i]), (false_ids[i], false_leaf[i]))
                )
                continue
            if i in depth or i in path:
                continue
            path.add(i)
            stack.append((i, True))
            for child, leaf in ((true_ids[i], true_leaf[i]), (false_ids[i], false_leaf[i])):
                if not leaf and child not in depth and child not in path:
                    stack.append((child, False))
        return depth.get(root, 0)

    return [walk(r) for r in roots]


def v1_tree_depths(node: NodeView) -> tuple[list[int], int]:
    """(max depth per tree, branch nodes) for the nodes_* layout of TreeEnsembleClassifier and
    TreeEnsembleRegressor: node ids are per tree, children are node ids of the same tree, leaves
    are the nodes whose mode is LEAF (a leaf-only tree has depth 0)."""
    trees = list(node.attr("nodes_treeids", []))
    ids = list(node.attr("nodes_nodeids", []))
    modes = [m.decode() if isinstance(m, bytes) else m for m in node.attr("nodes_modes", [])]
    true_ids = list(node.attr("nodes_truenodeids", []))
    false_ids = list(node.attr("nodes_falsenodeids", []))
    index = {(t, i): k for k, (t, i) in enumerate(zip(trees, ids))}
    leaf = [m == "LEAF" for m in modes] + [True] * (len(trees) - len(modes))
    true_k = [index.get((t, c), -1) for t, c in zip(trees, true_ids)]
    false_k = [index.get((t, c), -1) for t, c in zip(trees, false_ids)]
    # a child that is a leaf (or missing) ends the path
    true_leaf = [leaf[k] or true_k[k] < 0 or leaf[true_k[k]] for k in range(len(true_k))]
    false_leaf = [leaf[k] or false_k[k] < 0 or leaf[false_k[k]] for k in range(len(false_k))]
    children = {c for k in range(len(true_k)) if not leaf[k] for c in (true_k[k], false_k[k])}
    roots: dict[int, int] = {}
    for k, t in enumerate(trees):
        if k not in children and t not in roots:
            roots[t] = k
    branch_roots = [k for k in roots.values() if k < len(true_k) and not leaf[k]]
    depths = max_depths(branch_roots, true_k, false_k, true_leaf, false_leaf)
    depths += [0] * (len(roots) - len(branch_roots))  # leaf-only trees
    return depths, sum(1 for is_leaf in leaf if not is_leaf)


def tree_cost(node: NodeView, depths: Sequence[int], outputs: int, params: int) -> OpCost:
    n, _ = rows_features(node)
    comparisons = sum(depths)
    adds = len(depths) * outputs
    post, post_text = post_transform(node, n * outputs)
    flops = n * (comparisons + adds) + post
    return OpCost(
        flops=flops,
        attribute_params=params,
        formula=f"N·(Σ max depth + trees·outputs) = {n}·({comparisons:,} + {len(depths)}·{outputs}) "
        f"+ {post_text} = {flops:,} FLOPs; {params:,} stored numbers",
    )


def tree_ensemble_v1(node: NodeView) -> OpCost:
    """FLOPs = N x (sum over trees of max depth + trees x C) + post_transform per output (N x C),
    C = classes or n_targets: the deepest path of each tree bounds its comparisons, then 1 add per
    tree per output; attribute params = branch thresholds (nodes_values of non-LEAF nodes) +
    leaf weights (class_weights / target_weights) + base_values (TreeEnsembleClassifier,
    TreeEnsembleRegressor)."""
    depths, branches = v1_tree_depths(node)
    outputs = node.attr("n_targets") or classes(node) or 1
    params = branches + count(node, "class_weights", "target_weights", "base_values")
    return tree_cost(node, depths, outputs, params)


def tree_ensemble_v5(node: NodeView) -> OpCost:
    """FLOPs = N x (sum over trees of max depth + trees x n_targets) + post_transform per output:
    trees start at tree_roots; nodes_truenodeids / nodes_falsenodeids index branch nodes, or
    leaves where nodes_trueleafs / nodes_falseleafs say so; attribute params = nodes_splits +
    membership_values + leaf_weights (TreeEnsemble, ai.onnx.ml opset 5)."""
    true_ids = list(node.attr("nodes_truenodeids", []))
    false_ids = list(node.attr("nodes_falsenodeids", []))
    size = len(true_ids)
    true_leaf = [bool(x) for x in node.attr("nodes_trueleafs", [])] + [True] * size
    false_leaf = [bool(x) for x in node.attr("nodes_falseleafs", [])] + [True] * size
    true_leaf = [leaf or not 0 <= c < size for leaf, c in zip(true_leaf, true_ids)]
    false_leaf = [leaf or not 0 <= c < size for leaf, c in zip(false_leaf, false_ids)]
    roots = list(node.attr("tree_roots", []))
    valid = [r for r in roots if 0 <= r < size]
    depths = max_depths(valid, true_ids, false_ids, true_leaf, false_leaf) + [0] * (len(roots) - len(valid))
    params = count(node, "nodes_splits", "membership_values", "leaf_weights")
    return tree_cost(node, depths, node.attr("n_targets", 1), params)


# -- support vector machines --------------------------------------------------------------------

# kernel -> (FLOPs per support-vector element beyond its MAC, per kernel value, text)
KERNEL_FLOPS = {
    "LINEAR": (0, 0, "x·s"),
    "POLY": (0, 3, "(gamma·x·s + coef0)^degree: multiply, add, power"),
    "RBF": (1, 2, "exp(-gamma·|x - s|²): subtract per element, then multiply, exp"),
    "SIGMOID": (0, 3, "tanh(gamma·x·s + coef0): multiply, add, tanh"),
}


def svm_cost(
    node: NodeView, support: int, dual_per_vector: int, decisions: int, decision_flops: int, scores: int, params: int
) -> OpCost:
    n, f = rows_features(node)
    if support == 0:  # linear mode: coefficients are C x F weights, no kernel
        macs = n * f * dual_per_vector
        flops, post = post_transform(node, n * scores)
        flops += n * decisions * decision_flops
        return OpCost(
            macs=macs,
            flops=flops,
            attribute_params=params,
            formula=f"linear: N·F·C = {n}·{f}·{dual_per_vector} = {macs:,} MACs; {post}; {params:,} stored numbers",
        )
    kernel = node.attr("kernel_type", "LINEAR")
    per_element, per_value, rule = KERNEL_FLOPS.get(kernel, KERNEL_FLOPS["LINEAR"])
    kernel_macs = n * support * f
    dual_macs = n * support * dual_per_vector
    post_flops, post_text = post_transform(node, n * scores)
    flops = n * support * (per_element * f + per_value) + n * decisions * decision_flops + post_flops
    return OpCost(
        macs=kernel_macs + dual_macs,
        flops=flops,
        attribute_params=params,
        formula=f"kernel {kernel} N·SV·F = {n}·{support}·{f} = {kernel_macs:,} MACs ({rule}) + dual "
        f"N·SV·{dual_per_vector} = {dual_macs:,} MACs; {flops:,} FLOPs incl. {post_text}; "
        f"{params:,} stored numbers",
    )


def svm_classifier(node: NodeView) -> OpCost:
    """MACs = N x SV x F (kernel: dot product, or squared distance for RBF) + N x SV x (C - 1)
    (one-vs-one dual coefficients; SV = sum of vectors_per_class); FLOPs per kernel value: RBF
    F subtracts + multiply, exp; POLY / SIGMOID 3 (multiply, add, power / tanh); LINEAR 0; + 2 per
    class pair (add rho, vote), 6 more with prob_a (Platt: multiply, add, logistic 4; the pairwise
    coupling not counted) + post_transform per score. Without support vectors (linear SVM):
    MACs = N x F x C. Attribute params = support_vectors + coefficients + rho + prob_a + prob_b."""
    n_classes = max(classes(node), 2)
    support = sum(node.attr("vectors_per_class", []) or [])
    pairs = n_classes * (n_classes - 1) // 2
    params = count(node, "support_vectors", "coefficients", "rho", "prob_a", "prob_b")
    if support == 0:
        _, f = rows_features(node)
        weights = count(node, "coefficients") // max(f, 1)
        return svm_cost(node, 0, weights, 0, 0, weights, params)
    probabilities = bool(count(node, "prob_a"))
    return svm_cost(
        node,
        support,
        n_classes - 1,
        pairs,
        2 + (6 if probabilities else 0),
        n_classes if probabilities or n_classes == 2 else pairs,
        params,
    )


def svm_regressor(node: NodeView) -> OpCost:
    """MACs = N x SV x F (kernel) + N x SV (dual coefficients), SV = n_supports; FLOPs per kernel
    value as SVMClassifier (RBF: F subtracts + 2), + 1 per row (add rho) + post_transform; without
    support vectors (linear): MACs = N x F. Attribute params = support_vectors + coefficients + rho."""
    support = node.attr("n_supports", 0) or 0
    params = count(node, "support_vectors", "coefficients", "rho")
    return svm_cost(node, support, 1, 1, 1, 1, params)


# -- shapes ONNX's inference leaves unknown ------------------------------------------------------
# ONNX has schemas for these ops but infers no output shape for LinearRegressor, Scaler,
# Normalizer, Imputer, SVMClassifier, SVMRegressor and FeatureVectorizer, nor for
# ArrayFeatureExtractor on a 1-D X; the others it infers only once, in the whole-graph pass, from
# inputs that may still be unknown then. The shape stage asks a rule's ``shapes`` only for ops
# without a schema; these say what the outputs are, for when it also asks for ai.onnx.ml ops.


def _rows(node: NodeView) -> tuple | None:
    info = node.inputs[0] if node.inputs else None
    if info is None or info.shape is None:
        return None
    return tuple(info.shape[:-1]) if len(info.shape) > 1 else (1,)


def rows_by(width: Callable[[NodeView], int]) -> ShapeHandler:
    """A shape rule: one float output [rows, width(node)]."""

    def shapes(node: NodeView) -> list[OutputType | None]:
        rows = _rows(node)
        return [None if rows is None else (TensorProto.FLOAT, (*rows, width(node)))]

    return shapes


def float_like_input(node: NodeView) -> list[OutputType | None]:
    info = node.inputs[0] if node.inputs else None
    return [None if info is None else (TensorProto.FLOAT, info.shape)]


def like_input(node: NodeView) -> list[OutputType | None]:
    info = node.inputs[0] if node.inputs else None
    return [None if info is None else (info.dtype, info.shape)]


def svm_classifier_shapes(node: NodeView) -> list[OutputType | None]:
    rows = _rows(node)
    if rows is None:
        return [None, None]
    n_classes = max(classes(node), 2)
    support = sum(node.attr("vectors_per_class", []) or [])
    ovo = support and not count(node, "prob_a") and n_classes > 2
    return [(_label(node), rows), (TensorProto.FLOAT, (*rows, n_classes * (n_classes - 1) // 2 if ovo else n_classes))]


def feature_vectorizer_shapes(node: NodeView) -> list[OutputType | None]:
    info = node.inputs[0] if node.inputs else None
    if info is None or info.shape is None or not info.shape:
        return [None]
    return [(TensorProto.FLOAT, (info.shape[0], sum(node.attr("inputdimensions", []) or [])))]


def array_feature_extractor_shapes(node: NodeView) -> list[OutputType | None]:
    """[1, k] for a 1-D X, X's leading dims + [k] otherwise (k = the number of indices)."""
    x = node.inputs[0] if node.inputs else None
    y = node.inputs[1] if len(node.inputs) > 1 else None
    if x is None or x.shape is None or y is None or y.shape is None:
        return [None]
    k = prod(cast("tuple[int, ...]", y.shape)) if all(isinstance(d, int) for d in y.shape) else None  # ints: checked
    return [(x.dtype, (1, k) if len(x.shape) == 1 else (*x.shape[:-1], k))]


def _label(node: NodeView) -> int:
    return TensorProto.STRING if count(node, "classlabels_strings") else TensorProto.INT64


def linear_classifier_shapes(node: NodeView) -> list[OutputType | None]:
    """label [rows], scores [rows, C]: C = coefficients / F, 2 for a binary model stored as one row."""
    rows = _rows(node)
    info = node.inputs[0]
    if rows is None or info is None or not info.shape or not isinstance(info.shape[-1], int) or not info.shape[-1]:
        return [None, None]
    c = count(node, "coefficients") // info.shape[-1]
    c = 2 if c == 1 and classes(node) == 2 else c
    return [(_label(node), rows), (TensorProto.FLOAT, (*rows, c))]


def tree_classifier_shapes(node: NodeView) -> list[OutputType | None]:
    rows = _rows(node)
    return [None, None] if rows is None else [(_label(node), rows), (TensorProto.FLOAT, (*rows, classes(node)))]


def _register(op_types, handler, shapes=None) -> None:
    register(op_types, handler, family="ml", domain=ML, shapes=shapes)


_register("LinearClassifier", linear, linear_classifier_shapes)
_register("LinearRegressor", linear, rows_by(lambda node: node.attr("targets", 1)))
_register("Scaler", per_element(2, "(x - offset) · scale", "offset", "scale"), float_like_input)
_register("Normalizer", normalizer, float_like_input)
_register("Binarizer", per_element(1, "x > threshold ? 1 : 0: one compare"), like_input)
_register(
    "Imputer",
    per_element(2, "x == replaced ? imputed : x: compare, select", "imputed_value_floats", "imputed_value_int64s"),
    like_input,
)
_register(
    "LabelEncoder",
    lookup(
        "one table lookup per element",
        "keys_strings",
        "keys_int64s",
        "keys_floats",
        "keys_tensor",
        "values_strings",
        "values_int64s",
        "values_floats",
        "values_tensor",
    ),
)
_register(
    "OneHotEncoder", lookup("one category lookup per element, one-hot rows written", "cats_strings", "cats_int64s")
)
_register("CategoryMapper", lookup("one table lookup per element", "cats_strings", "cats_int64s"))
_register("DictVectorizer", lookup("map entries scattered into a dense row", "string_vocabulary", "int64_vocabulary"))
_register("FeatureVectorizer", zero_cost("concatenates its inputs into one row per sample"), feature_vectorizer_shapes)
_register(
    "ArrayFeatureExtractor", zero_cost("gathers the indexed elements of the last axis"), array_feature_extractor_shapes
)
_register("ZipMap", zero_cost("packs each row of scores into a map from class label to score"))
_register("CastMap", zero_cost("converts a map's values into a dense tensor"))
_register("TreeEnsembleClassifier", tree_ensemble_v1, tree_classifier_shapes)
_register("TreeEnsembleRegressor", tree_ensemble_v1, rows_by(lambda node: node.attr("n_targets", 1)))
_register("TreeEnsemble", tree_ensemble_v5, rows_by(lambda node: node.attr("n_targets", 1)))
_register("SVMClassifier", svm_classifier, svm_classifier_shapes)
_register("SVMRegressor", svm_regressor, rows_by(lambda node: 1))
