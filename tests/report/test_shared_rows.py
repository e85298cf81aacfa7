"""Renderers format what nodes share (op, shape, numbers) once: rows that look alike must still
print exactly what each node holds, and the compact JSON must be what json.dumps writes."""

from __future__ import annotations

import json

from conftest import make_model
from models import if_model, look_alike_model, loop_model
from onnx import TensorProto, helper

import onnxroof
from onnxroof.report.json import document_json
from onnxroof.report.text.table import render_csv, render_table
from onnxroof.result import to_document

F32 = TensorProto.FLOAT


def test_table_rows_that_look_alike_keep_their_own_index_name_and_shape():
    text = render_table(onnxroof.analyze(look_alike_model()))
    # Relu: 16 elements = 16 FLOPs, 64 B in and out, 16 / 128 = 0.125 FLOP/B; names clip at 40
    # characters in the middle (19, an ellipsis, the last 20) and control characters print as '?'
    assert (
        text[text.index("\n#  ") :]
        == """
#  name                                      op    dtype    output  MACs  FLOPs  params  weights    in   out  FLOP/B
0  a                                         Relu  float32  2x8        0     16       0      0 B  64 B  64 B   0.125
1  b                                         Relu  float32  2x8        0     16       0      0 B  64 B  64 B   0.125
2  c?z                                       Relu  float32  4x4        0     16       0      0 B  64 B  64 B   0.125
3  nnnnnnnnnnnnnnnnnnn…nnnnnnnnnnnnnnnnnnnn  Foo   float32  ?          0      0       0      0 B  64 B   0 B       0  NOT COUNTED: no cost rule for x.y::Foo
"""
    )


def test_csv_rows_that_look_alike_keep_their_own_index_name_and_shape():
    assert (
        render_csv(onnxroof.analyze(look_alike_model())).splitlines()[1:]
        == [
            "0,a,Relu,,ok,float32,2x8,0,0,16,0,0,64,64,0.125",
            "1,b,Relu,,ok,float32,2x8,0,0,16,0,0,64,64,0.125",
            "2,c?z,Relu,,ok,float32,4x4,0,0,16,0,0,64,64,0.125",  # a control character shown, not written (the JSON keeps it)
            f"3,{'n' * 45},Foo,x.y,unsupported,float32,?,0,0,0,0,0,64,0,0",
        ]
    )


def alternating_shapes_model():
    """Adds with the same numbers and formula text on shapes that alternate (1x8 + 8, 8 + 1x8), and
    names and symbolic dims JSON has to escape."""
    nodes, previous = [], "x"
    for i in range(6):
        operands = [previous, "b"] if i % 2 else ["b", previous]
        nodes.append(helper.make_node("Add", operands, [f"t{i}"], name=f'add "{i}"\\\t\u00e9'))
        previous = f"t{i}"
    inputs = [("x", F32, ["batch\u00b7size", 8]), ("b", F32, [8])]
    return make_model(nodes, inputs, [(previous, F32, None)])


def test_compact_json_is_what_the_plain_encoder_writes():
    empty = make_model([], [("x", F32, [1])], [("x", F32, [1])])  # no nodes: every per-node list is []
    models = (look_alike_model(), alternating_shapes_model(), if_model(), loop_model(True), loop_model(False), empty)
    analyses = [onnxroof.analyze(model) for model in models]
    # on targets, nodes a and b have the same placement and energy too
    analyses += [
        onnxroof.analyze(look_alike_model(), targets=["h100-sxm", "myriad-x"]),
        onnxroof.analyze(alternating_shapes_model(), targets=["jetson-orin-nano"], dims=["batch\u00b7size=3"]),
    ]
    for analysis in analyses:
        document = to_document(analysis)
        assert "".join(document_json(analysis, compact=True)) == json.dumps(document, separators=(",", ":")) + "\n"
        assert "".join(document_json(analysis, compact=False)) == json.dumps(document, indent=2) + "\n"
