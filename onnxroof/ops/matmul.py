"""Matrix products and linear algebra: Gemm, MatMul, Einsum, com.microsoft FusedMatMul and
GemmFastGelu, Det, and the Fourier transforms (DFT, STFT), counted in MACs where the op is a matrix
product. The contrib ops state their output shapes (numpy matmul's, after FusedMatMul's transposes).

Einsum is counted the way onnxruntime executes it (``EinsumTypedComputeProcessor::Run``): the
operands are contracted pairwise from left to right. Before a pair is multiplied, a label whose
last use is in this pair, that is absent from the output and present on one side only, is
summed out of that side (``in - out`` adds, like ReduceSum); then the pair is one batched
MatMul whose MACs are the product of the sizes of every label in either operand. A label is
dropped after the last operand that holds it unless the output keeps it. For two operands with
no such one-sided label this is the textbook count, the product of the sizes of all distinct
labels; for three or more it is the left-to-right pairwise sum, not the (much larger) single
product over all labels. Ellipsis dims broadcast numpy-style, right-aligned.

DFT follows onnxruntime too: a radix-2 FFT when the transform length N is a power of two,
counted 5·N·log2(N) FLOPs per complex transform (N/2·log2 N butterflies of one complex multiply
(6) and two complex adds (4)); otherwise the direct sum, one complex multiply-add (8 FLOPs) per
output bin per input sample.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from math import log2, prod

from . import _shapes as shape_rules
from .base import NodeView, OpCost, OutputType, UnknownValue, register
from .elementwise import FAST_GELU_FLOPS

# ------------------------------------------------------------------------------------ Gemm, MatMul


def gemm(node: NodeView) -> OpCost:
    """MACs = M x K x N for Y = alpha·op(A)·op(B) + beta·C, M and K from A (transA), N from B
    (transB); the C (bias) add is folded in."""
    a, b = node.input_shape(0), node.input_shape(1)
    m, k = (a[1], a[0]) if node.attr("transA", 0) else (a[0], a[1])
    # N from B, not the output: a contrib QGemm's output may have no shape
    b_k, n = (b[1], b[0]) if node.attr("transB", 0) else (b[0], b[1])
    if b_k != k:
        raise ValueError(f"op(A) is {m} x {k} but op(B) is {b_k} x {n}")
    macs = m * k * n
    return OpCost(macs=macs, formula=f"{m}·{k}·{n} = {macs:,} MACs")


def matmul(node: NodeView) -> OpCost:
    """MACs = prod(output shape) x K, K the contracted dim (A's last); batch dims broadcast. An
    output with no known shape is sized from A and B (numpy matmul) when their inner dims agree."""
    a = node.input_shape(0)
    k = a[-1]
    output = node.outputs[0] if node.outputs else None
    b = node.inputs[1] if len(node.inputs) > 1 else None
    b_shape = b.shape if b is not None and b.is_known else None
    if (
        (output is None or not output.is_known) and b_shape is not None and b_shape[-2 if len(b_shape) > 1 else 0] == k
    ):  # a contrib op's output (MatMulInteger16, ...)
        # (type: ignore below) a and b_shape known: the product's dims are ints
        outputs = prod(shape_rules.matmul(a, b_shape))  # type: ignore[arg-type]
    else:
        outputs = node.output_elements(0)
    macs = outputs * k
    return OpCost(macs=macs, formula=f"{outputs:,} outputs·{k} = {macs:,} MACs")


def fused_matmul(node: NodeView) -> OpCost:
    """MACs = batch x M x K x N for Y = alpha·op(A)·op(B) (com.microsoft FusedMatMul): transBatchA/B
    move dim 0 next to the matrix dims, transA/B swap the last two, batch dims broadcast; alpha is
    the GEMM's scale and is folded in. Computed from the input shapes (contrib outputs may have no
    inferred shape)."""
    a, b = node.input_shape(0), node.input_shape(1)
    a, b = _fused_operands(node, a, b)
    m, k = (a[-1], a[-2]) if node.attr("transA", 0) else (a[-2], a[-1])
    n = b[-2] if node.attr("transB", 0) else b[-1]
    # (type: ignore below) input_shape's dims are ints, so their broadcast's are
    batch = prod(shape_rules.broadcast(a[:-2], b[:-2]))  # type: ignore[arg-type]
    macs = batch * m * k * n
    return OpCost(macs=macs, formula=f"{batch}·{m}·{k}·{n} = {macs:,} MACs")


def gemm_fast_gelu(node: NodeView) -> OpCost:
    """MACs = prod(output) x K for X [.., K] · W [K, N] (bias folded in); FLOPs = 2 x MACs + 9 x output
    elements (FastGelu's tanh form). Inputs: X, W, bias; Y: matmul(X, W)'s shape, X's type
    (com.microsoft GemmFastGelu, the transformers optimizer's MatMul + FastGelu fusion)."""
    product = matmul(node)
    outputs = product.macs // node.input_shape(0)[-1] if node.input_shape(0)[-1] else 0
    flops = FAST_GELU_FLOPS * outputs
    return OpCost(
        macs=product.macs,
        flops=flops,
        formula=f"{product.formula}; FastGelu {FAST_GELU_FLOPS}·{outputs:,} outputs = {flops:,} FLOPs",
    )


def matmul_shapes(node: NodeView) -> list[OutputType | None]:
    """Y: numpy matmul's output of inputs 0 and 1, input 0's type."""
    return [(shape_rules.dtype(node, 0), shape_rules.matmul(shape_rules.dims(node, 0), shape_rules.dims(node, 1)))]


def _fused_operands(node: NodeView, a: tuple, b: tuple) -> tuple[tuple, tuple]:
    """FusedMatMul's A and B as matrices: transBatch applied, a vector made a 1-row / 1-column matrix."""
    if node.attr("transBatchA", 0) and len(a) > 2:
        a = shape_rules.trans_batch(a)
    if node.attr("transBatchB", 0) and len(b) > 2:
        b = shape_rules.trans_batch(b)
    a = (1, *a) if len(a) == 1 else a  # numpy: a vector operand is a 1-row / 1-column matrix
    b = (*b, 1) if len(b) == 1 else b
    return a, b


def fused_matmul_shapes(node: NodeView) -> list[OutputType | None]:
    """Y: [broadcast batch, M, N] with M = op(A)'s rows, N = op(B)'s columns (transA/transB swap
    the last two dims, transBatchA/B move dim 0 next to them); a 1-D operand's dim is dropped; A's
    element type."""
    a0, b0 = shape_rules.dims(node, 0), shape_rules.dims(node, 1)
    a, b = _fused_operands(node, a0, b0)
    m = a[-1] if node.attr("transA", 0) else a[-2]
    n = b[-2] if node.attr("transB", 0) else b[-1]
    shape = (*shape_rules.broadcast(a[:-2], b[:-2]), *(() if len(a0) == 1 else (m,)), *(() if len(b0) == 1 else (n,)))
    return [(shape_rules.dtype(node, 0), shape)]


# ------------------------------------------------------------------------------------------ Einsum

_ELLIPSIS = "..."


def _ellipsis_labels(count: int) -> list[str]:
    """Labels for ``count`` ellipsis dims, right-aligned: '.2', '.1', '.0' (broadcast numpy-style)."""
    return [f".{i}" for i in reversed(range(count))]


def _term_labels(term: str, rank: int | None) -> list[str]:
    if _ELLIPSIS in term:
        head, tail = term.split(_ELLIPSIS)
        dims = 0 if rank is None else rank - len(head) - len(tail)
        return [*head, *_ellipsis_labels(dims), *tail]
    return list(term)


def einsum_plan(equation: str, shapes: list[tuple[int, ...]]) -> tuple[list[str], int, int]:
    """The pairwise left-to-right plan onnxruntime runs: (steps as text, MACs, reduce FLOPs)."""
    equation = equation.replace(" ", "")
    lhs, arrow, rhs = equation.partition("->")
    terms = [_term_labels(term, len(shape)) for term, shape in zip(lhs.split(","), shapes)]
    output = _output_labels(terms, rhs if arrow else None)
    operands = [list(dict.fromkeys(labels)) for labels in terms]  # a repeated label is a diagonal: a view
    last_use = {label: index for index, labels in enumerate(operands) for label in labels}
    plan = _EinsumPlan(_label_sizes(terms, shapes))
    first = operands[0]
    current = plan.sum_out(first, {label for label in first if last_use[label] == 0 and label not in output})
    for index in range(1, len(operands)):
        reduced = {label for label, last in last_use.items() if last == index and label not in output}
        current = plan.contract(current, operands[index], reduced)
    return plan.steps, plan.macs, plan.reduce_flops


def _label_sizes(terms: list[list[str]], shapes: list[tuple[int, ...]]) -> dict[str, int]:
    """label -> its size (broadcast: a 1 meets the real size)."""
    sizes: dict[str, int] = {}
    for labels, shape in zip(terms, shapes):
        for label, size in zip(labels, shape):
            sizes[label] = max(sizes.get(label, 1), size)
    return sizes


def _output_labels(terms: list[list[str]], rhs: str | None) -> set[str]:
    """The labels the result keeps: the right-hand side's, or (implicit mode, ``rhs`` None) the
    ellipsis dims and the labels used exactly once."""
    if rhs is not None:
        ellipsis_rank = max((sum(1 for label in labels if label.startswith(".")) for labels in terms), default=0)
        explicit_rank = len(rhs.replace(_ELLIPSIS, "")) + (ellipsis_rank if _ELLIPSIS in rhs else 0)
        return set(_term_labels(rhs, explicit_rank))
    counts: dict[str, int] = {}
    for labels in terms:
        for label in labels:
            counts[label] = counts.get(label, 0) + 1
    return {label for label, count in counts.items() if count == 1 or label.startswith(".")}


@dataclass
class _EinsumPlan:
    """The steps of a left-to-right plan as they are taken, and their MACs and adds."""

    sizes: dict[str, int]  # label -> size
    steps: list[str] = field(default_factory=list)
    macs: int = 0
    reduce_flops: int = 0

    def size_of(self, labels: list[str]) -> int:
        return prod(self.sizes[label] for label in labels)

    def sum_out(self, labels: list[str], drop: set[str]) -> list[str]:
        """``labels`` with ``drop`` summed out (size(labels) - size(kept) adds)."""
        kept = [label for label in labels if label not in drop]
        if len(kept) < len(labels):
            adds = self.size_of(labels) - self.size_of(kept)
            self.reduce_flops += adds
            self.steps.append(f"sum {_labels_name(labels)}->{_labels_name(kept)}: {adds:,} adds")
        return kept

    def contract(self, current: list[str], right: list[str], reduced: set[str]) -> list[str]:
        """One pair: each side first sums out the reduced labels the other lacks; then the product
        of every label of the pair, in MACs."""
        current = self.sum_out(current, {label for label in reduced if label not in right})
        right = self.sum_out(right, {label for label in reduced if label not in current})
        union = list(dict.fromkeys([*current, *right]))
        step_macs = self.size_of(union)
        self.macs += step_macs
        result = [label for label in union if label not in reduced]
        self.steps.append(
            f"{_labels_name(current)},{_labels_name(right)}->{_labels_name(result)}: "
            f"{'·'.join(str(self.sizes[label]) for label in union) or '1'} = {step_macs:,} MACs"
        )
        return result


def _labels_name(labels: list[str]) -> str:
    """The labels as an equation writes them, one mark for the whole ellipsis."""
    text = "".join("…" if label.startswith(".") else label for label in labels)
    while "……" in text:
        text = text.replace("……", "…")
    return text or "scalar"


def einsum(node: NodeView) -> OpCost:
    """MACs = sum over the left-to-right pairwise contractions of the product of the sizes of every
    label in the pair (two operands: the product of all distinct labels); FLOPs += the adds that
    sum out a label held by one side only before its last pair. One operand: the adds of its
    reduction (a pure transpose or diagonal is data movement, 0)."""
    shapes = [node.input_shape(i) for i in range(len(node.node.input))]
    steps, macs, reduce_flops = einsum_plan(node.attr("equation", ""), shapes)
    plan = "; ".join(steps) or "a transpose/copy: 0 FLOPs"
    return OpCost(macs=macs, flops=reduce_flops, formula=f"{node.attr('equation', '')}: {plan}")


# --------------------------------------------------------------------------------- linear algebra


def det(node: NodeView) -> OpCost:
    """Per n x n matrix, LU with partial pivoting: MACs = (n-1)·n·(2n-1)/6 (the row updates,
    sum of (n-1-k)^2) and FLOPs = n^2 - 1 (n(n-1)/2 pivot comparisons + n(n-1)/2 divides for the
    multipliers + n - 1 multiplies of the diagonal); times the number of matrices."""
    data = node.input_shape(0)
    n = data[-1]
    matrices = prod(data[:-2])
    macs = matrices * (n - 1) * n * (2 * n - 1) // 6
    flops = matrices * (n * n - 1)
    return OpCost(macs=macs, flops=flops, formula=f"{matrices}·LU({n}): {macs:,} MACs + {flops:,} FLOPs")


# ------------------------------------------------------------------------------------ DFT, STFT


def _is_power_of_two(n: int) -> bool:
    return n > 0 and n & (n - 1) == 0


def transform_flops(n: int, bins: int) -> tuple[int, str]:
    """FLOPs of one complex transform of length n producing ``bins`` outputs (see module doc)."""
    if _is_power_of_two(n):
        flops = 5 * n * int(log2(n))
        return flops, f"FFT 5·{n}·log2 {n} = {flops:,}"
    flops = 8 * bins * n
    return flops, f"direct 8·{bins}·{n} = {flops:,}"


def _dft_axis(node: NodeView, rank: int) -> tuple[int, str]:
    """DFT-20 takes ``axis`` as input 2 (default -2), DFT-17 as an attribute (default 1); the two
    defaults agree for the usual rank-3 signal [batch, n, 1|2]."""
    note = ""
    if node.has_input(2):
        value = node.input_value(2)
        axis = int(value.reshape(-1)[0]) if value is not None else -2
        note = "" if value is not None else " (axis input unknown: -2 assumed)"
    else:
        axis = int(node.attr("axis", -2))
    return (axis + rank if axis < 0 else axis), note


def dft(node: NodeView) -> OpCost:
    """FLOPs = transforms x (5·N·log2 N if N is a power of two, else 8·bins·N) (+ 2·N per transform
    for the 1/N scale when inverse), N = dft_length or the signal length along ``axis``, bins =
    output length along it, transforms = input elements / (N_in x 1|2 components). A real signal
    is transformed as complex, as onnxruntime does."""
    data = node.input_shape(0)
    axis, note = _dft_axis(node, len(data))
    length = node.input_value(1)
    n = int(length.reshape(-1)[0]) if length is not None else data[axis]
    bins = node.output_shape(0)[axis]
    transforms = prod(data[:-1]) // data[axis] if data[axis] else 0
    per_transform, text = transform_flops(n, bins)
    scale = 2 * n if node.attr("inverse", 0) else 0  # the inverse's 1/N on real and imaginary parts
    flops = transforms * (per_transform + scale)
    scale_text = f" + {scale} (1/N)" if scale else ""
    return OpCost(flops=flops, formula=f"{transforms:,} transforms·({text}{scale_text}) = {flops:,} FLOPs{note}")


def stft(node: NodeView) -> OpCost:
    """FLOPs = batch x frames x (DFT(frame_length) + frame_length window multiplies if a window
    is given); DFT(n) as for DFT (FFT if n is a power of two, else direct over the output bins);
    frame_length = the window's length or the frame_length input; frames and bins from the
    output [batch, frames, bins, 2]."""
    batch, frames, bins = node.output_shape(0)[:3]
    if node.has_input(2):
        frame_length = node.input_shape(2)[0]
    else:
        value = node.input_value(3)
        if value is None:
            raise UnknownValue("STFT frame_length unknown: no window input and frame_length is not a constant")
        frame_length = int(value.reshape(-1)[0])
    per_frame, text = transform_flops(frame_length, bins)
    windowing = frame_length if node.has_input(2) else 0
    flops = batch * frames * (per_frame + windowing)
    return OpCost(flops=flops, formula=f"{batch}·{frames} frames·({text} + {windowing}) = {flops:,} FLOPs")


register("Gemm", gemm, family="matmul")
register("MatMul", matmul, family="matmul")
register("Einsum", einsum, family="matmul")
register("Det", det, family="matmul")
# onnxruntime runs TransposeMatMul with the FusedMatMul kernel (same attributes)
register(
    ["FusedMatMul", "TransposeMatMul"],
    fused_matmul,
    family="matmul",
    domain="com.microsoft",
    shapes=fused_matmul_shapes,
)
register("GemmFastGelu", gemm_fast_gelu, family="matmul", domain="com.microsoft", shapes=matmul_shapes)
register("DFT", dft, family="signal", arg_inputs=(1, 2))  # dft_length, axis
register("STFT", stft, family="signal", arg_inputs=(1, 3))  # frame_step, frame_length
