"""Issue 45's acceptance, end to end: a model built here, analysed on a hand-made dataflow target
(a three-stage pipeline's throughput and latency; a model that needs two contexts) and its
figures in every output (the report, the JSON entry, the text summary, the findings). The Coral
cut is tests/roofline/test_edge_tpu.py's. Every figure is worked by hand in the comments."""

from __future__ import annotations

import json

import pytest
from conftest import make_model, zeros
from onnx import TensorProto, helper

import onnxroof
from onnxroof.report.html.page import target_card
from onnxroof.report.text.markdown import render_markdown
from onnxroof.report.text.table import target_lines
from onnxroof.result.entries import target_entry

F32 = TensorProto.FLOAT
MEASURED = 'tag = "measured"\nsource = "a test figure"'


def _target(tmp_path, peak: float, link: float, units: int, context_bytes: float, switch_s: float = 0.0) -> str:
    """A dataflow chip: ``units`` compute units sharing ``peak`` fp32 op/s, a host link of ``link``
    B/s ('DRAM'), contexts of ``context_bytes`` of parameters, each load costing ``switch_s`` more."""
    path = tmp_path / "chip.toml"
    path.write_text(
        f'schema = "onnxroof-target/1"\nname = "chip"\ndescription = "a test dataflow chip"\n'
        f"[peak_ops_per_s.fp32]\nvalue = {peak!r}\n{MEASURED}\n"
        f"[dram.bandwidth_bytes_per_s]\nvalue = {link!r}\n{MEASURED}\n"
        f"[dataflow.context_bytes]\nvalue = {context_bytes!r}\n{MEASURED}\n"
        f"[dataflow.units]\nvalue = {units}\n{MEASURED}\n"
        + (f"[dataflow.switch_s]\nvalue = {switch_s!r}\n{MEASURED}\n" if switch_s else "")
    )
    return str(path)


def _matmuls(widths: list[int]):
    """x [batch, w0] @ W1 [w0, w1] @ W2 [w1, w2] ...: one layer a MatMul, 2 x w_i x w_i+1 FLOPs a
    frame and 4 x w_i x w_i+1 B of parameters."""
    nodes = [
        helper.make_node("MatMul", [f"h{i}", f"w{i}"], [f"h{i + 1}"], name=f"mm{i + 1}") for i in range(len(widths) - 1)
    ]
    last = len(widths) - 1
    return make_model(
        nodes,
        [("h0", F32, ["batch", widths[0]])],
        [(f"h{last}", F32, ["batch", widths[-1]])],
        [(f"w{i}", zeros(widths[i], widths[i + 1])) for i in range(last)],
    )


def test_a_three_stage_pipeline_runs_at_its_slowest_stage_and_sums_its_stages_for_latency(tmp_path):
    # widths 10, 50, 20, 75: the layers do 2 x 10 x 50 = 1,000, 2 x 50 x 20 = 2,000 and
    # 2 x 20 x 75 = 3,000 FLOPs a frame; 6 units of 6e9 / 6 = 1e9 op/s: alone 1, 2 and 3 µs; the
    # allocation 1, 2, 3 units makes every stage 1 µs. Throughput: a frame per slowest stage,
    # 1 µs: 1,000,000 frames/s. Latency: the three stages, 3 µs, plus the frame over the link: x
    # (10 floats, 40 B) in and y (75 floats, 300 B) out, 340 B / 6.8e8 B/s = 0.5 µs: 3.5 µs.
    target = _target(tmp_path, peak=6e9, link=6.8e8, units=6, context_bytes=1e6)
    analysis = onnxroof.analyze(_matmuls([10, 50, 20, 75]), targets=[target])
    (report,) = analysis.targets
    timing = report.dataflow
    assert len(timing.contexts) == 1
    assert timing.contexts[0].stage_s == pytest.approx([1e-6, 1e-6, 1e-6])
    assert timing.frames_per_s == pytest.approx(1e6)
    assert timing.latency_s == pytest.approx(3.5e-6)
    # the report's throughput is the pipeline's, not batch / latency (1 / 3.5 µs = 285,714)
    assert report.throughput_per_s == pytest.approx(1e6)
    assert report.latency_s == pytest.approx(3.5e-6)
    # every stage ties at 1 µs: the one with the most work limits (shrinking it frees the most
    # units), mm3, 3,000 of 6,000 FLOPs: 50% of the work
    assert timing.limiting == "mm3" and timing.work_share("mm3") == pytest.approx(0.5)
    words = "1,000,000 frames/s · latency 3.5 µs a frame · 1 context · throughput set by the slowest stage, mm3 (50%"
    assert words in timing.words()
    # every output: the JSON entry, the text summary
    entry = json.loads(json.dumps(target_entry(report)))["dataflow"]
    assert entry["frames_per_s"] == pytest.approx(1e6) and entry["latency_s"] == pytest.approx(3.5e-6)
    assert entry["context_count"] == 1 and entry["limiting"] == "mm3" and entry["limiting_is_stage"]
    # the chip's constants are tagged measured: forecasts, not bounds (no band: the target states none)
    assert entry["frames_per_s_kind"] == entry["latency_kind"] == "forecast" and entry["error_band"] is None
    assert [s["name"] for s in entry["contexts"][0]["stages"]] == ["mm1", "mm2", "mm3"]
    text = "\n".join(target_lines(report))
    assert "  pipeline: 1,000,000 frames/s · latency 3.5 µs a frame · 1 context" in text
    assert "heaviest stages" in text and "top kernels by time" not in text
    markdown = render_markdown(analysis)
    assert "- **chip** pipeline: 1,000,000 frames/s · latency 3.5 µs a frame · 1 context" in markdown
    card = target_card(report)
    assert card.edge[0][0] == "pipeline" and card.edge[0][1].startswith("1,000,000 frames/s")
    assert card.rate_unit == "frames" and card.bound == "mm3" and card.time_split == "1 context"
    assert "    pipeline: 1,000,000 frames/s" in str(analysis)
    # each kernel timed as the pipeline runs it: its stage, 1 µs, the three the frame's 3 µs of stages
    assert [n.placement.time_s for n in report.nodes] == pytest.approx([1e-6, 1e-6, 1e-6])


def test_a_forecast_pipeline_with_nodes_left_out_says_bounds_in_every_output(tmp_path):
    # the pipeline above with an op no rule costs after it (a custom domain's Frob): its time is not
    # in the 1,000,000 frames/s, so they are at most that, and the 3.5 µs at least, on every line
    target = _target(tmp_path, peak=6e9, link=6.8e8, units=6, context_bytes=1e6)
    model = _matmuls([10, 50, 20, 75])
    model.graph.node.append(helper.make_node("Frob", ["h3"], ["z"], name="frob", domain="test.custom"))
    model.graph.output[0].name = "z"
    model.opset_import.append(helper.make_opsetid("test.custom", 1))
    analysis = onnxroof.analyze(model, targets=[target])
    (report,) = analysis.targets
    assert report.uncounted_nodes == 1 and report.latency_kind == "bound"
    entry = json.loads(json.dumps(target_entry(report)))["dataflow"]
    assert entry["frames_per_s_kind"] == "upper bound" and entry["latency_kind"] == "lower bound"
    assert entry["text"].startswith("≤ 1,000,000 frames/s · latency ≥ 3.5 µs a frame")
    assert "    pipeline: ≤ 1,000,000 frames/s" in str(analysis)
    assert target_card(report).edge[0][1].startswith("≤ 1,000,000 frames/s")


def test_the_slowest_stage_finding_measures_the_frame_rate_at_half_its_work(tmp_path):
    # the pipeline above with mm3 at half its work (1,500 FLOPs): alone 1, 2 and 1.5 µs on one
    # unit; 6 units make every stage T with 1/T + 2/T + 1.5/T = 6: T = 0.75 µs, 1,333,333 frames/s.
    # The gain: 1 - 0.75 = 0.25 µs a frame, 25% of the frame time.
    target = _target(tmp_path, peak=6e9, link=6.8e8, units=6, context_bytes=1e6)
    analysis = onnxroof.analyze(_matmuls([10, 50, 20, 75]), targets=[target])
    found = analysis.review()
    (stage,) = [f for f in found if f.kind == "stage"]
    assert stage.title.startswith("mm3 (MatMul) is the pipeline's slowest stage: 50% of the chip's work per frame")
    assert stage.evidence["frames_per_s_at_half_work"] == pytest.approx(4e6 / 3)
    assert stage.gain_s == pytest.approx(0.25e-6) and stage.gain_share == pytest.approx(0.25)
    # no per-kernel roofline advice on a layer pipeline
    assert not {"intensity", "largest", "fusion", "spill", "weights", "launch"} & {f.kind for f in found}


def test_a_model_that_needs_two_contexts_reloads_them_every_frame_and_batching_amortises_them(tmp_path):
    # widths 100, 100, 100: two layers of 2 x 100 x 100 = 20,000 FLOPs and 40,000 B of parameters;
    # contexts of 50,000 B hold one each: two contexts. 2 units of 1e9 op/s: a context's one layer
    # takes both, 20,000 / 2e9 = 10 µs. At batch 1 each context is loaded (40,000 B / 1e9 B/s =
    # 40 µs, + 5 µs switch) and runs its frame (10 µs): 2 x 55 = 110 µs a frame, 9,090.9 frames/s;
    # the latency adds the frame over the link, x and y (400 B each): 0.8 µs, 110.8 µs.
    target = _target(tmp_path, peak=2e9, link=1e9, units=2, context_bytes=5e4, switch_s=5e-6)
    analysis = onnxroof.analyze(_matmuls([100, 100, 100]), targets=[target])
    (report,) = analysis.targets
    timing = report.dataflow
    assert [len(c.layers) for c in timing.contexts] == [1, 1]
    assert timing.frames_per_s == pytest.approx(1 / 110e-6)
    assert timing.latency_s == pytest.approx(110.8e-6)
    assert timing.limiting == "context switches"
    assert "9,090 frames/s · latency 111 µs a frame · 2 contexts, 1 frame per load" in timing.words()
    assert json.loads(json.dumps(target_entry(report)))["dataflow"]["context_count"] == 2
    # the finding, analysed again at batch 8: per context 40 + 5 + 10 + 7 x 10 = 125 µs, both
    # 250 µs for 8 frames, 31.25 µs a frame (32,000 frames/s): 110 - 31.25 = 78.75 µs a frame less
    (contexts,) = [f for f in analysis.review() if f.kind == "contexts"]
    assert contexts.title.startswith("the model needs 2 contexts (78.1 KiB of parameters, 48.8 KiB a context)")
    assert contexts.change == "--batch 8"
    assert contexts.evidence["larger_batch_frames_per_s"] == pytest.approx(32_000)
    assert contexts.gain_s == pytest.approx(78.75e-6)


def test_a_bound_pipelines_latency_counts_every_context_load():
    # peak figures (no units): two layers of 2e9 ops and 600 kB each, contexts of 1 MB: two. At
    # 2e12 op/s the compute is 2 ms a frame; a frame passes through both contexts, each loaded
    # first: 1.2e6 B over a 1e8 B/s link, 12 ms, in its latency whatever the group. At a group of
    # 8 the loads are 1.5 ms a frame, under the compute: 500 frames/s, and the latency ≥ 12 ms.
    from onnxroof.roofline.dataflow import DataflowChip, Layer, time_dataflow
    from onnxroof.roofline.figures import Figure

    layers = [Layer("first", 2 * 10**9, 600_000), Layer("second", 2 * 10**9, 600_000)]
    chip = DataflowChip(context_bytes=Figure(1e6, "estimate", "a test figure"))
    eight = time_dataflow(layers, 0, chip, 2e12, 1e8, group=8)
    assert eight.bound and eight.frames_per_s == pytest.approx(500)
    assert eight.latency_s == pytest.approx(12e-3)
    assert eight.words().startswith("≤ 500 frames/s · latency ≥ 12 ms a frame · 2 contexts, 8 frames per load")
    assert eight.limit_words().startswith("compute at the peak")
