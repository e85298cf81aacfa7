"""Reductions, scans, selections and losses: operations counted from input and output sizes.

Reducing n values to one takes n - 1 pairwise operations, so a reduction from ``in`` input
elements to ``out`` output elements costs ``in - out`` combining operations (the same
convention as pooling's window - 1 and the variadic ops' inputs - 1; ReduceMean over H, W
therefore counts exactly what GlobalAveragePool counts). Per-element and per-output extras:

| op | per input element | combine | per output element | total |
|---|---|---|---|---|
| ReduceSum, ReduceMax, ReduceMin, ReduceProd, ArgMax, ArgMin | - | in - out | - | in - out |
| ReduceMean | - | in - out | divide | in |
| ReduceSumSquare | square | in - out | - | 2·in - out |
| ReduceL1 | abs | in - out | - | 2·in - out |
| ReduceL2 | square | in - out | sqrt | 2·in |
| ReduceLogSum | - | in - out | log | in |
| ReduceLogSumExp (stable) | subtract max, exp | max: in - out, sum: in - out | log, add max | 4·in |

Scans (CumSum, CumProd) count one operation per element. Selections count comparisons: TopK
as a heap of size k, Unique as a sort, Hardmax as a row max. Losses count their log-softmax
(LogSoftmax's 6 per element) and the negative-log-likelihood gather, weight and reduction.
"""

from __future__ import annotations

from math import ceil, log2, prod

from .base import Handler, NodeView, OpCost, OpTrait, register

# op -> (FLOPs per input element a, FLOPs per output element b, the rule); total = a·in + b·out
REDUCTIONS: dict[str, tuple[int, int, str]] = {
    "ReduceSum": (1, -1, "in - out adds"),
    "ReduceMax": (1, -1, "in - out comparisons"),
    "ReduceMin": (1, -1, "in - out comparisons"),
    "ReduceProd": (1, -1, "in - out multiplies"),
    "ArgMax": (1, -1, "in - out comparisons"),
    "ArgMin": (1, -1, "in - out comparisons"),
    "ReduceMean": (1, 0, "in - out adds + out divides"),
    "ReduceSumSquare": (2, -1, "in squares + in - out adds"),
    "ReduceL1": (2, -1, "in abs + in - out adds"),
    "ReduceL2": (2, 0, "in squares + in - out adds + out square roots"),
    "ReduceLogSum": (1, 0, "in - out adds + out logs"),
    "ReduceLogSumExp": (
        4,
        0,
        ("numerically stable: in - out max + in subtracts + in exps + in - out adds + out logs + out adds of the max"),
    ),
}


def _total_text(per_input: int, per_output: int) -> str:
    """'2·in - out', 'in', ...: the total as a formula in input and output elements."""
    text = "in" if per_input == 1 else f"{per_input}·in"
    if per_output:
        text += f" {'+' if per_output > 0 else '-'} {'' if abs(per_output) == 1 else f'{abs(per_output)}·'}out"
    return text


def _count(per_input: int, per_output: int, inputs: int, outputs: int) -> int:
    return max(per_input * inputs + per_output * outputs, 0)


def reduction_flop_counter(per_input: int, per_output: int, rule: str) -> Handler:
    """A rule counting ``per_input`` x input elements + ``per_output`` x output elements."""

    total = _total_text(per_input, per_output)

    def handler(node: NodeView) -> OpCost:
        inputs, outputs = node.input_elements(0), node.output_elements(0)
        flops = _count(per_input, per_output, inputs, outputs)
        return OpCost(flops=flops, formula=f"{total} with in = {inputs:,}, out = {outputs:,}: {flops:,} FLOPs ({rule})")

    handler.__doc__ = f"FLOPs = {total}, in/out = input/output elements ({rule})"
    return handler


def scan(node: NodeView) -> OpCost:
    """FLOPs = 1 x elements: each output is the running sum/product times one more element
    (the first of each line and exclusive mode's leading identity are counted too)."""
    elements = node.input_elements(0)
    return OpCost(flops=elements, formula=f"1·{elements:,} elements = {elements:,} FLOPs")


def _axis(node: NodeView, rank: int, default: int) -> int:
    axis = int(node.attr("axis", default))
    return axis + rank if axis < 0 else axis


def top_k(node: NodeView) -> OpCost:
    """FLOPs = rows x n x (1 + ceil(log2 k)) comparisons: a k-element heap scanned over the n
    values of each row (one compare with the heap root, and in the worst case a sift of log2 k);
    k is read from the output shape, rows = input elements / n."""
    data = node.input_shape(0)
    axis = _axis(node, len(data), -1)
    n, k = data[axis], node.output_shape(0)[axis]
    rows = prod(data) // n if n else 0
    per_element = 1 + (ceil(log2(k)) if k > 1 else 0)
    flops = rows * n * per_element
    return OpCost(flops=flops, formula=f"{rows:,} rows·{n}·(1 + ⌈log2 {k}⌉) = {flops:,} comparisons")


def hardmax(node: NodeView) -> OpCost:
    """FLOPs = input elements - rows: n - 1 comparisons per row of n along ``axis`` (opset-13
    semantics, axis default -1) to find the max; writing the one-hot row is data movement."""
    data = node.input_shape(0)
    axis = _axis(node, len(data), -1)
    elements = prod(data)
    rows = elements // data[axis] if data[axis] else 0
    flops = elements - rows
    return OpCost(flops=flops, formula=f"{elements:,} elements - {rows:,} rows = {flops:,} comparisons")


def non_zero(node: NodeView) -> OpCost:
    """FLOPs = input elements: one comparison with zero each; the index output is data-dependent."""
    elements = node.input_elements(0)
    return OpCost(flops=elements, formula=f"1·{elements:,} elements = {elements:,} comparisons")


def unique(node: NodeView) -> OpCost:
    """FLOPs = (n x ceil(log2 n) + n - 1) x s: a comparison sort of n items then one pass over
    neighbours; without ``axis`` the items are the n input elements (s = 1), with ``axis`` they
    are the n slices along it, each comparison touching s = elements / n values."""
    data = node.input_shape(0)
    elements = prod(data)
    if node.attr("axis") is None:
        n, slice_size = elements, 1
    else:
        axis = _axis(node, len(data), 0)
        n = data[axis]
        slice_size = elements // n if n else 0
    sort = n * ceil(log2(n)) if n > 1 else 0
    flops = (sort + max(n - 1, 0)) * slice_size
    return OpCost(flops=flops, formula=f"({n:,}·⌈log2 {n:,}⌉ + {n:,} - 1)·{slice_size:,} = {flops:,} comparisons")


def _nll_flops(node: NodeView, samples: int, weight_slot: int) -> tuple[int, str]:
    """FLOPs of the negative-log-likelihood part over ``samples`` = N x d1 x ... x dk targets:
    negate (1), class weight multiply (1, if weights), ignore_index compare (1, if set), then the
    reduction: 'none' 0, 'sum' samples - 1, 'mean' samples - 1 adds + 1 divide (+ samples - 1
    adds for the weight sum when weighted)."""
    weighted = node.has_input(weight_slot)
    per_sample = 1 + int(weighted) + int(node.attr("ignore_index") is not None)
    reduction = node.attr("reduction", "mean")
    if reduction == "none":
        reduce = 0
    elif reduction == "sum":
        reduce = samples - 1
    else:
        reduce = samples + (samples - 1 if weighted else 0)
    return per_sample * samples + reduce, f"{per_sample}·{samples:,} targets + {reduce:,} ({reduction})"


def negative_log_likelihood_loss(node: NodeView) -> OpCost:
    """FLOPs = per-target ops x targets + reduction, targets = input elements / C: gather
    -input[n, target[n], ...] (negate), times weight[target] if weights, an ignore_index compare
    if set; reduction 'none' 0, 'sum' targets - 1, 'mean' targets (+ targets - 1 for the weight
    sum when weighted)."""
    data = node.input_shape(0)
    samples = prod(data) // data[1] if data[1] else 0
    flops, text = _nll_flops(node, samples, 2)
    return OpCost(flops=flops, formula=f"{text} = {flops:,} FLOPs")


def softmax_cross_entropy_loss(node: NodeView) -> OpCost:
    """FLOPs = 6 x score elements (log-softmax over C: max, subtract, exp, sum, log, subtract, as
    LogSoftmax) + the negative-log-likelihood part over N x d1 x ... x dk targets (see
    NegativeLogLikelihoodLoss)."""
    scores = node.input_shape(0)
    elements = prod(scores)
    samples = elements // scores[1] if scores[1] else 0
    nll, text = _nll_flops(node, samples, 2)
    flops = 6 * elements + nll
    return OpCost(flops=flops, formula=f"6·{elements:,} scores + {text} = {flops:,} FLOPs")


def tf_idf_vectorizer(node: NodeView) -> OpCost:
    """FLOPs = input elements x n-gram sizes x (max_skip_count + 1) count increments (one per
    n-gram looked up at each position; the hash lookup itself is not arithmetic) + output
    elements x 1 weight multiply for mode IDF/TFIDF (0 for TF)."""
    positions = node.input_elements(0)
    sizes = int(node.attr("max_gram_length", 1)) - int(node.attr("min_gram_length", 1)) + 1
    skips = int(node.attr("max_skip_count", 0)) + 1
    weighting = node.output_elements(0) if node.attr("mode", "TF") != "TF" else 0
    flops = positions * sizes * skips + weighting
    return OpCost(
        flops=flops, formula=f"{positions:,}·{sizes}·{skips} increments + {weighting:,} weights = {flops:,} FLOPs"
    )


for _op, (_per_input, _per_output, _rule) in REDUCTIONS.items():
    # ReduceX-18 (ReduceSum-13) take axes as input 1: a setting, not a parameter
    register(
        _op,
        reduction_flop_counter(_per_input, _per_output, _rule),
        family="reduction",
        arg_inputs=() if _op.startswith("Arg") else (1,),
    )
register(["CumSum", "CumProd"], scan, family="reduction", arg_inputs=(1,))  # axis
register("TopK", top_k, family="reduction", arg_inputs=(1,))  # K
register("Hardmax", hardmax, family="reduction")
register("NonZero", non_zero, family="reduction", traits=OpTrait.DATA_DEPENDENT_SIZE)
register("Unique", unique, family="reduction", traits=OpTrait.DATA_DEPENDENT_SIZE)
register("NegativeLogLikelihoodLoss", negative_log_likelihood_loss, family="reduction")
register("SoftmaxCrossEntropyLoss", softmax_cross_entropy_loss, family="reduction")
register("TfIdfVectorizer", tf_idf_vectorizer, family="reduction")
