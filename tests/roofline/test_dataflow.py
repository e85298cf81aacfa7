"""A dataflow chip's layer pipeline (roofline/dataflow.py): throughput from the slowest stage, latency
from the sum of the stages, contexts by parameter capacity. Every figure below is worked by hand."""

from __future__ import annotations

import pytest

from onnxroof.roofline.dataflow import DataflowChip, Layer, layer_times, split_contexts, time_dataflow
from onnxroof.roofline.dataflow_mapping import balanced_contexts
from onnxroof.roofline.figures import Figure


def _figure(value: float) -> Figure:
    return Figure(value, "measured", "a test figure")


# a chip of 6 units at 6e12 op/s in all (1e12 each), a 1e9 B/s host link
PEAK, LINK = 6e12, 1e9


def test_a_three_stage_pipeline_runs_at_its_slowest_stage_and_sums_them_for_latency():
    # layers of 1e9, 2e9 and 3e9 ops on 6 units of 1e12 op/s: the allocation 1, 2, 3 units makes every
    # stage 1e9 / 1e12 = 1 ms (5 units would leave one stage at 2 ms: 6 is the fewest for 1 ms).
    # Throughput: one frame per slowest stage, 1 ms -> 1,000 frames/s. Latency: the three stages,
    # 3 ms, plus the frame's 1e5 B in and out over the 1e9 B/s link, 0.1 ms: 3.1 ms.
    layers = [Layer("a", 10**9, 1000), Layer("b", 2 * 10**9, 1000), Layer("c", 3 * 10**9, 1000)]
    chip = DataflowChip(context_bytes=_figure(1e6), units=_figure(6))
    timing = time_dataflow(layers, 10**5, chip, PEAK, LINK)
    assert len(timing.contexts) == 1
    assert timing.contexts[0].stage_s == pytest.approx([1e-3, 1e-3, 1e-3])
    assert timing.frames_per_s == pytest.approx(1000)
    assert timing.latency_s == pytest.approx(3.1e-3)
    assert not timing.bound


def test_a_line_buffered_pipelines_stages_share_out_its_latency():
    # the three stages above, 1 ms each, on a chip whose frame is through a context after one slowest
    # stage (fill_stages 1): latency 1 ms + the frame's 0.1 ms over the link = 1.1 ms (the layers give
    # no rows: no tail). The three stages add up to 3 ms, more than the frame's latency: each layer's
    # part of it is its stage x 1.1 / 3 = 0.367 ms, the three 1.1 ms (not 273 % of the latency)
    layers = [Layer("a", 10**9, 1000), Layer("b", 2 * 10**9, 1000), Layer("c", 3 * 10**9, 1000)]
    chip = DataflowChip(context_bytes=_figure(1e6), units=_figure(6), fill_stages=_figure(1))
    timing = time_dataflow(layers, 10**5, chip, PEAK, LINK)
    assert timing.latency_s == pytest.approx(1.1e-3)
    assert layer_times(timing) == pytest.approx({"a": 1.1e-3 / 3, "b": 1.1e-3 / 3, "c": 1.1e-3 / 3})


def test_a_small_layer_takes_a_whole_unit_and_starves_the_large_one():
    # 1e6 and 5e9 ops on 2 units: each layer needs one, so the large one runs on 1 unit: 5e9 / 1e12
    # = 5 ms per frame (200 frames/s) where the peak would allow (5e9 + 1e6) / 2e12 = 2.5 ms
    layers = [Layer("small", 10**6, 0), Layer("large", 5 * 10**9, 0)]
    timing = time_dataflow(layers, 0, DataflowChip(context_bytes=_figure(1e6), units=_figure(2)), 2e12, LINK)
    assert timing.frames_per_s == pytest.approx(200)
    assert timing.limiting == "large" and timing.limiting_share == pytest.approx(1.0)


def test_compute_and_streaming_units_are_shared_out_apart():
    # 4 units of compute (1e12 op/s each at 4e12) and 4 of streaming (1e9 B/s each at 4e9 B/s), each
    # layer at least one of each. "work": 3e9 ops and 1e6 B, alone 3 ms of compute and 1 ms of
    # streaming; "moving": 1e6 ops and 3e6 B, alone 1 us and 3 ms. Compute: 3 units to work and 1 to
    # moving give work 1 ms (4 units is the fewest for 1 ms: 3 ms / 1 ms + 1); streaming likewise, 3
    # to moving and 1 to work: 1 ms. Both stages 1 ms: 1,000 frames/s. One pool for both, the
    # stage taking the longer of the two alone (3 ms each), 2 units each would give 1.5 ms (667
    # frames/s): a layer heavy in work and one heavy in activations do not compete for one pool.
    layers = [
        Layer("work", 3 * 10**9, 0, activation_bytes=10**6),
        Layer("moving", 10**6, 0, activation_bytes=3 * 10**6),
    ]
    chip = DataflowChip(context_bytes=_figure(1e6), units=_figure(4), activation_bytes_per_s=_figure(4e9))
    timing = time_dataflow(layers, 0, chip, 4e12, LINK)
    assert timing.contexts[0].stage_s == pytest.approx([1e-3, 1e-3])
    assert timing.frames_per_s == pytest.approx(1000)


def test_a_model_that_needs_two_contexts_pays_their_loads_once_per_group_of_frames():
    # parameters 600 kB + 600 kB do not fit one 1 MB context: two contexts, one layer each. 2 units
    # of 1e12 op/s: each context's one layer takes both units, 2e9 / 2e12 = 1 ms a frame.
    # A group of 8 frames: per context load 6e5 B / 1e9 B/s = 0.6 ms + switch 0.4 ms, then the
    # pipeline: fill 1 ms + 7 more frames x 1 ms = 8 ms; per context 9 ms, both 18 ms:
    # 8 / 18 ms = 444.4 frames/s. At batch 1: 2 x (0.6 + 0.4 + 1) = 4 ms, 250 frames/s.
    # One frame's latency: both loads and fills, 4 ms (no input or output bytes here).
    layers = [Layer("first", 2 * 10**9, 600_000), Layer("second", 2 * 10**9, 600_000)]
    chip = DataflowChip(context_bytes=_figure(1e6), units=_figure(2), switch_s=_figure(0.4e-3))
    assert [len(c.layers) for c in split_contexts(layers, 1e6, 2)] == [1, 1]
    eight = time_dataflow(layers, 0, chip, 2e12, LINK, group=8)
    assert len(eight.contexts) == 2
    assert eight.frames_per_s == pytest.approx(8 / 18e-3)
    assert eight.latency_s == pytest.approx(4e-3)
    assert eight.limiting == "context switches"
    one = time_dataflow(layers, 0, chip, 2e12, LINK, group=1)
    assert one.frames_per_s == pytest.approx(250)


def test_with_peak_figures_the_pipeline_is_a_bound_on_compute_and_the_link():
    # no units: every layer at its ideal share of the peak. The same two contexts at 2e12 op/s:
    # compute 4e9 / 2e12 = 2 ms a frame; the link carries 1.2e6 B of parameters per group of 8
    # frames, 0.15 ms a frame: compute bounds it, 500 frames/s. At batch 1: 1.2 ms of parameters,
    # still under 2 ms.
    layers = [Layer("first", 2 * 10**9, 600_000), Layer("second", 2 * 10**9, 600_000)]
    chip = DataflowChip(context_bytes=_figure(1e6))
    timing = time_dataflow(layers, 0, chip, 2e12, LINK, group=8)
    assert timing.bound and timing.frames_per_s == pytest.approx(500)
    # a slower link, 1e8 B/s: 1.2e6 B / 1e8 = 12 ms per group of 8 frames, 1.5 ms a frame, under
    # compute; at batch 1 12 ms a frame: the link bounds it, 83.3 frames/s
    assert time_dataflow(layers, 0, chip, 2e12, 1e8, group=1).frames_per_s == pytest.approx(1 / 12e-3)
    assert time_dataflow(layers, 0, chip, 2e12, 1e8, group=1).limiting == "host link"


def test_layer_controllers_split_a_model_whose_parameters_fit_one_context():
    # four layers of 1e9 ops and 1 kB each: 4 kB fit the 1 MB context, but each has a LayerNorm folded
    # in, and the chip makes 2 layers of a LayerNorm: 1 + 2 = 3 controllers a layer, 6 a context, so two
    # layers a context: two contexts. A layer alone on one unit of 1e12 op/s takes 1 ms of work + the
    # fixed 0.1 ms = 1.1 ms; two such layers share 4 units, 2 each: 0.55 ms a stage. fill_stages 2: a
    # context's latency is 2 x 0.55 = 1.1 ms. At batch 1 a frame pays, per context, the 2 kB over the
    # 1e9 B/s link (2 us) + the 1 ms switch + the 1.1 ms fill: 2.102 ms; both contexts 4.204 ms.
    layers = [Layer(f"l{i}", 10**9, 1000, norms=1) for i in range(4)]
    chip = DataflowChip(
        context_bytes=_figure(1e6),
        units=_figure(4),
        switch_s=_figure(1e-3),
        layers_per_context=_figure(6),
        norm_layers=_figure(2),
        stage_s=_figure(0.1e-3),
        fill_stages=_figure(2),
    )
    timing = time_dataflow(layers, 0, chip, 4e12, LINK)
    assert [len(c.layers) for c in timing.contexts] == [2, 2]
    assert timing.contexts[0].stage_s == pytest.approx([0.55e-3, 0.55e-3])
    assert timing.frames_per_s == pytest.approx(1 / 4.204e-3)
    # three such layers in one context of 9 controllers, 4 units: the smallest T with
    # 3 x 1.1 ms / T <= 4 is T = 0.825 ms; fill_stages 2 -> latency 1.65 ms, where the sum of the
    # stages would be 2.475 ms
    wide = DataflowChip(
        context_bytes=_figure(1e6),
        units=_figure(4),
        layers_per_context=_figure(9),
        norm_layers=_figure(2),
        stage_s=_figure(0.1e-3),
        fill_stages=_figure(2),
    )
    three = time_dataflow(layers[:3], 0, wide, 4e12, LINK)
    assert len(three.contexts) == 1
    assert three.frames_per_s == pytest.approx(1 / 0.825e-3)
    assert three.latency_s == pytest.approx(1.65e-3)


def test_a_light_network_runs_no_faster_than_its_frame_rows_stream_in():
    # two layers of 1e8 ops on 2 units of 1e12 op/s: one unit each, 0.1 ms a stage, 10,000 frames/s on
    # its layers alone. The frame is 224 rows high and a row takes at least 1.5 us to stream in: 224 x
    # 1.5 us = 0.336 ms a frame (its 1e4 B at 1e9 B/s would take 0.01 ms), 2,976 frames/s, set by the
    # input rows (the whole of the frame's time). Latency: the frame streamed in, 0.336 ms, then
    # fill_stages 1 x the slowest stage, 0.1 ms: 0.436 ms (the layers' rows unknown: no tail).
    layers = [Layer("a", 10**8, 1000), Layer("b", 10**8, 1000)]
    chip = DataflowChip(context_bytes=_figure(1e6), units=_figure(2), row_s=_figure(1.5e-6), fill_stages=_figure(1))
    timing = time_dataflow(layers, 10**4, chip, 2e12, LINK, rows=224)
    assert timing.frames_per_s == pytest.approx(1 / 0.336e-3)
    assert timing.latency_s == pytest.approx(0.436e-3)
    assert timing.limiting == "input rows" and timing.limiting_share == pytest.approx(1.0)
    assert "224 input rows streaming in (at least 1.5 µs a row)" in timing.words()
    # a heavier pair, 1e9 ops each: 1 ms a stage, longer than the rows' 0.336 ms: the stage sets it
    heavy = [Layer("a", 10**9, 1000), Layer("b", 10**9, 1000)]
    assert time_dataflow(heavy, 10**4, chip, 2e12, LINK, rows=224).frames_per_s == pytest.approx(1000)
    # a model with no image input (rows 0) has no such floor: its 1e4 B take 0.01 ms, the stage 0.1 ms
    assert time_dataflow(layers, 10**4, chip, 2e12, LINK).frames_per_s == pytest.approx(10_000)


def test_a_frames_latency_adds_each_layers_last_row_after_the_slowest_stage():
    # a line-buffered pipeline: three layers of 1e9 ops on 3 units of 1e12 op/s, one each: 1 ms a
    # stage, 1,000 frames/s. Their outputs are 56, 7 and 1 rows high (a feature map, a late map, a
    # classifier's vector): each layer's last row takes its stage over its rows after the layer
    # before gives its own, 1/56 + 1/7 + 1/1 ms = 1.1607 ms of tail. fill_stages 1: the latency is
    # 1 ms + 1.1607 ms = 2.1607 ms (no input or output bytes); the frame rate does not change.
    layers = [Layer("a", 10**9, 1000, rows=56), Layer("b", 10**9, 1000, rows=7), Layer("c", 10**9, 1000, rows=1)]
    chip = DataflowChip(context_bytes=_figure(1e6), units=_figure(3), fill_stages=_figure(1))
    timing = time_dataflow(layers, 0, chip, 3e12, LINK)
    assert timing.frames_per_s == pytest.approx(1000)
    assert timing.latency_s == pytest.approx(1e-3 * (1 + 1 / 56 + 1 / 7 + 1))


def test_with_peak_figures_a_light_network_is_bounded_by_its_rows_streaming_in():
    # no units (peak figures) but a row_s of 1.08 us (the targets' lower envelope): two layers of 1e8
    # ops at 2e12 op/s take 0.1 ms of compute; the frame's 1e4 B over 1e9 B/s 0.01 ms; its 224 rows
    # 224 x 1.08 us = 0.24192 ms, the longest: at most 4,133.6 frames/s, latency at least 0.24192 ms,
    # set by the input rows, still a bound
    layers = [Layer("a", 10**8, 1000), Layer("b", 10**8, 1000)]
    chip = DataflowChip(context_bytes=_figure(1e6), row_s=_figure(1.08e-6))
    timing = time_dataflow(layers, 10**4, chip, 2e12, LINK, rows=224)
    assert timing.bound and timing.frames_per_s == pytest.approx(1 / 0.24192e-3)
    assert timing.latency_s == pytest.approx(0.24192e-3) and timing.limiting == "input rows"
    # 1e9 ops a layer: 1 ms of compute at the peak, longer than the rows: compute bounds it
    heavy = [Layer("a", 10**9, 1000), Layer("b", 10**9, 1000)]
    assert time_dataflow(heavy, 10**4, chip, 2e12, LINK, rows=224).limiting == "compute at the peak"


def test_the_partitioner_sizes_a_multi_context_split_for_the_most_frames_per_second():
    # four layers of 3e9, 1e9, 1e9 and 1e9 ops (no parameters), 4 units of 1e12 op/s, 3 layer
    # controllers a context, 0.5 ms a switch, fill 1 slowest stage, groups of 8 frames.
    # Filled in order: [3e9, 1e9, 1e9] + [1e9]. The first context's 4 units: the smallest T with
    # 3 ms / T + 1 + 1 <= 4 is 1.5 ms (the large layer on 2 units); the second's one layer on 4 units
    # 0.25 ms. A group of 8: per context the switch + 8 slowest stages: 0.5 + 12 and 0.5 + 2 = 15 ms,
    # 8 / 15 ms = 533.3 frames/s.
    # The partitioner (partition_batch 8) tries 2, 3 and 4 contexts of equal controllers. Two: [3e9,
    # 1e9] + [1e9, 1e9] (a layer goes where its middle falls: 0.5 and 1.5 of 4 controllers in the
    # first half), 3 ms / T + 1 <= 4 -> T = 1 ms, and 0.5 ms: 2 x 0.5 + 8 x 1.5 = 13 ms. Three:
    # [3e9] + [1e9, 1e9] + [1e9] (middles 0.5, 1.5, 2.5, 3.5 over thirds of 4/3): 0.75, 0.5 and 0.25
    # ms, 3 x 0.5 + 8 x 1.5 = 13.5 ms. Four: 0.75 + 3 x 0.25 ms, 4 x 0.5 + 12 = 14 ms. Two contexts
    # are fastest: 8 / 13 ms = 615.4 frames/s. At batch 1, the same compiled split: 2 x 0.5 + 1 + 0.5
    # = 2.5 ms a frame (the split filled in order would take 2 x 0.5 + 1.5 + 0.25 = 2.75 ms).
    layers = [Layer("big", 3 * 10**9, 0), Layer("b", 10**9, 0), Layer("c", 10**9, 0), Layer("d", 10**9, 0)]
    constants = dict(
        context_bytes=_figure(1e6),
        units=_figure(4),
        switch_s=_figure(0.5e-3),
        layers_per_context=_figure(3),
        fill_stages=_figure(1),
    )
    in_order = time_dataflow(layers, 0, DataflowChip(**constants), 4e12, LINK, group=8)
    assert [len(c.layers) for c in in_order.contexts] == [3, 1]
    assert in_order.frames_per_s == pytest.approx(8 / 15e-3)
    chip = DataflowChip(**constants, partition_batch=_figure(8))
    eight = time_dataflow(layers, 0, chip, 4e12, LINK, group=8)
    assert [[layer.name for layer in c.layers] for c in eight.contexts] == [["big", "b"], ["c", "d"]]
    assert eight.frames_per_s == pytest.approx(8 / 13e-3)
    assert time_dataflow(layers, 0, chip, 4e12, LINK, group=1).frames_per_s == pytest.approx(1 / 2.5e-3)
    assert [len(c.layers) for c in balanced_contexts(layers, 3, chip)] == [1, 2, 1]
    # a network that fits one context is compiled as one (the compiler tries that first): unchanged
    assert len(time_dataflow(layers[:3], 0, chip, 4e12, LINK, group=8).contexts) == 1
