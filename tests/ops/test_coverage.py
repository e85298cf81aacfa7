"""Every op of the default ONNX domain has a cost rule or an explicit no-arithmetic
classification, and every rule runs on the nodes ONNX's own operator test cases build."""

from __future__ import annotations

import warnings
from collections import defaultdict

import onnx
import onnx.defs
import pytest

from onnxroof.cost.graph import cost_graph
from onnxroof.frontend.shapes import infer_shapes
from onnxroof.ops import rule_for, tensor

SCHEMAS = [s for s in onnx.defs.get_all_schemas_with_history() if s.domain == ""]
ALL_DEFAULT_OPS = sorted({s.name for s in SCHEMAS})

# The ops that do no arithmetic, and how each is classified. Every other op must count something.
NO_ARITHMETIC: dict[str, str] = {
    **{
        op: "view"
        for op in "Reshape Flatten Squeeze Unsqueeze Identity Dropout BitCast Optional OptionalGetElement".split()
    },
    **{op: "metadata" for op in "Shape Size".split()},
    **{op: "container" for op in "SequenceEmpty SequenceLength OptionalHasElement".split()},
    **{
        op: "data movement"
        for op in "Concat Transpose Gather GatherElements GatherND Slice Split Pad Expand Tile Cast CastLike DepthToSpace "
        "SpaceToDepth ReverseSequence Compress Trilu OneHot CenterCropPad EyeLike TensorScatter SequenceConstruct "
        "SequenceInsert SequenceAt SequenceErase ConcatFromSequence SplitToSequence Constant ConstantOfShape Range "
        "MaxUnpool".split()
    },
    **{
        op: "zero: random"
        for op in "RandomNormal RandomUniform RandomNormalLike RandomUniformLike Bernoulli Multinomial".split()
    },
    **{op: "zero: string" for op in "RegexFullMatch StringConcat StringNormalizer StringSplit".split()},
    "ImageDecoder": "zero: image decoding",
}
HANDLER_OF_KIND = {"view": tensor.view, "metadata": tensor.metadata, "container": tensor.container}
_NO_ARITHMETIC_HANDLERS = {tensor.data_movement, tensor.view, tensor.metadata, tensor.container}


def _is_no_arithmetic(op: str) -> bool:
    rule = rule_for("", op)
    assert rule is not None
    return rule.handler in _NO_ARITHMETIC_HANDLERS or rule.formula.startswith("FLOPs = 0:")


def test_every_default_domain_op_has_a_rule():
    missing = [op for op in ALL_DEFAULT_OPS if rule_for("", op) is None]
    assert not missing, f"{len(missing)} of {len(ALL_DEFAULT_OPS)} default-domain ops have no rule: {missing}"


def test_no_arithmetic_classification_is_explicit():
    """An op is costed at zero only if it is listed above; an arithmetic op never gets a zero rule."""
    zero = {op for op in ALL_DEFAULT_OPS if rule_for("", op) and _is_no_arithmetic(op)}
    assert zero == set(NO_ARITHMETIC)
    for op, kind in NO_ARITHMETIC.items():
        rule = rule_for("", op)
        if kind in HANDLER_OF_KIND:
            assert rule.handler is HANDLER_OF_KIND[kind], op
        elif kind == "data movement":  # the shared handler, or a rule of its own that says why it is zero
            assert rule.handler is tensor.data_movement or rule.formula.startswith("FLOPs = 0:"), op
        else:
            assert kind.startswith("zero"), f"{op}: unknown kind {kind!r}"
            assert rule.formula.startswith("FLOPs = 0:") and len(rule.formula) > 20, op  # states its reason


def is_variadic(op: str) -> bool:
    """Any version of the op ends in a variadic input: then any slot can exist."""
    return any(
        s.inputs and s.inputs[-1].option == onnx.defs.OpSchema.FormalParameterOption.Variadic
        for s in SCHEMAS
        if s.name == op
    )


# The ops where the slot check means something: a rule that declares argument slots, on a schema
# with a fixed number of inputs. Ops without a rule are test_every_default_domain_op_has_a_rule's.
ARG_SLOT_OPS = sorted(
    op for op in ALL_DEFAULT_OPS if rule_for("", op) is not None and rule_for("", op).arg_inputs and not is_variadic(op)
)


def test_argument_slot_check_has_ops_to_check():
    assert ARG_SLOT_OPS  # else the parametrized check below collects no case


@pytest.mark.parametrize("op", ARG_SLOT_OPS)
def test_argument_slots_are_inputs_of_the_schema(op):
    rule = rule_for("", op)
    slots = max(len(s.inputs) for s in SCHEMAS if s.name == op)
    assert all(slot < slots for slot in rule.arg_inputs), f"{op}: argument slots {sorted(rule.arg_inputs)} of {slots}"


# Ops whose ONNX test cases only take a zero-cost path (nearest sampling, a plain scatter).
_CASES_ONLY_ZERO = {"Upsample", "Scatter"}


@pytest.fixture(scope="module")
def node_test_cases():
    node_cases = pytest.importorskip("onnx.backend.test.case.node")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the generators divide by zero on purpose
        return node_cases.collect_testcases(None)


def test_every_rule_runs_on_onnx_node_test_cases(node_test_cases):
    """~1,900 models from ONNX's operator tests: no default-domain node is unsupported, no rule
    fails to read a node, and every arithmetic op counts something on at least one case."""
    unsupported, unreadable = set(), []
    counted: dict[str, int] = defaultdict(int)
    seen: set[str] = set()
    for case in node_test_cases:
        model = case.model
        graph = cost_graph(model, infer_shapes(model, model.graph.node))  # the rules, without the memory stage
        for record in graph.records:
            if record.domain not in ("", "ai.onnx"):
                continue
            if record.status == "unsupported":
                unsupported.add(record.op_type)
            if "could not read" in record.reason:
                unreadable.append(f"{case.name}: {record.op_type}: {record.reason}")
            if record.status == "ok":
                seen.add(record.op_type)
                counted[record.op_type] += bool(record.flops or record.macs)
    assert node_test_cases and seen - set(NO_ARITHMETIC), "no arithmetic op was costed: nothing checked below"
    assert not unsupported, f"no rule for {sorted(unsupported)}"
    assert not unreadable, unreadable[:5]
    silent = sorted(op for op in seen - set(NO_ARITHMETIC) - _CASES_ONLY_ZERO if not counted[op])
    assert not silent, f"arithmetic ops costed at zero on every case: {silent}"
