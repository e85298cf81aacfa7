"""What a node does, for fusion (roofline/kernels.py) and for the class of the kernel it runs in
(roofline/work.py): a view, a convolution or matmul, attention's activation product, a transpose,
an elementwise op, a softmax, a reduction, or work that runs alone."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..cost.records import NodeStatus
from ..ops import OpTrait, traits_of

if TYPE_CHECKING:
    from ..cost.records import NodeRecord

# The rule families whose MACs make a kernel's anchor (a convolution or matmul its epilogue joins):
# the registry's families, plus "attention", the family the cost stage gives an activation x
# activation matmul. What an op is (elementwise, a softmax, a strided copy) its traits say.
MAC_FAMILIES = frozenset({"conv", "matmul", "attention", "quantized"})


CONV_OPS = frozenset({"Conv", "ConvInteger", "QLinearConv"})


def node_kind(record: NodeRecord, ran: bool = False) -> str:
    """What a node does, for fusion (a folded constant runs on the host: it joins no kernel) or,
    with ``ran``, for the class of a kernel a runtime launched (a constant it computes every run
    is classed by what it computes)."""
    if record.view:
        return "view"
    if record.subgraphs or record.shape_only or (record.status == NodeStatus.CONSTANT and not ran):
        return "alone"  # control flow runs its own kernels; shape arithmetic and folded constants run on the host
    if record.macs and record.family in MAC_FAMILIES:
        return "attention" if record.family == "attention" else "mac"
    traits = traits_of(record.domain, record.op_type)
    kind = _TRAIT_KINDS.get(traits._value_)
    if kind is None:
        kind = _TRAIT_KINDS[traits._value_] = _kind_of_traits(traits)
    if kind:
        return kind
    if record.family in ("reduction", "normalization"):
        return "reduction"
    return "alone"


KINDS = ("view", "alone", "mac", "attention", "layout", "elementwise", "softmax", "reduction")  # what node_kind says
# an op's traits (their bits: a Flag's hash is Python code) -> _kind_of_traits (a Flag test is slow; graphs are large)
_TRAIT_KINDS: dict[int, str] = {}


def _kind_of_traits(traits: OpTrait) -> str:
    """The kind an op's traits make it ("" when they make none)."""
    if OpTrait.PERMUTES_AXES in traits:
        return "layout"  # a transpose: a fused attention kernel reads or writes through it
    if OpTrait.ELEMENTWISE in traits:  # one function per element (or channel): an epilogue
        return "elementwise"
    if OpTrait.SOFTMAX in traits:
        return "softmax"
    return ""
