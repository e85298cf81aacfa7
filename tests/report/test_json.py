"""The compact JSON writes the model order's timeline once and replays it when the best order is
the model's own schedule: both timelines must still be what json.dumps writes, whether the best
order is the model's or another."""

from __future__ import annotations

import json

from models import interleaved_branches_model, look_alike_model

import onnxroof
from onnxroof.report.json import document_json
from onnxroof.result import Encoded


def compact_document(analysis) -> dict:
    text = "".join(document_json(analysis, compact=True))
    assert text == json.dumps(analysis.to_dict(), separators=(",", ":")) + "\n"
    return json.loads(text)


def test_best_order_that_is_the_model_order_has_the_same_timeline():
    analysis = onnxroof.analyze(look_alike_model())
    assert analysis.memory.best.schedule is analysis.memory.model_order
    memory = compact_document(analysis)["memory"]
    # one entry per node, in the model order
    assert [step["node"] for step in memory["timeline"]] == ["a", "b", "c\x1bz", "n" * 45]
    assert memory["best_order_timeline"] == memory["timeline"]


def test_best_order_that_beats_the_model_order_has_its_own_timeline():
    analysis = onnxroof.analyze(interleaved_branches_model())
    memory = compact_document(analysis)["memory"]
    # the model interleaves the branches (A1, B1, A2, B2); the best order finishes branch A first
    assert [step["node"] for step in memory["timeline"]] == ["A1", "B1", "A2", "B2", "join"]
    assert [step["node"] for step in memory["best_order_timeline"]][:2] == ["A1", "A2"]
    assert memory["timeline"][1]["live_bytes"] == 8_040  # x, la and lb: 40 + 4,000 + 4,000 B


def test_a_kept_list_writes_the_same_chunks_twice():
    items = [f'{{"step":{i}}}' for i in range(1_200)]  # more than one batch
    kept = Encoded(iter(items), keep=True)
    first, second = "".join(kept.chunks(batch=500)), "".join(kept.chunks(batch=500))
    assert first == second == json.dumps([{"step": i} for i in range(1_200)], separators=(",", ":"))
    empty = Encoded([], keep=True)
    assert "".join(empty.chunks()) == "".join(empty.chunks()) == "[]"
