"""The gains measured, for benchmarks/validate_findings.py: the record of one predicted gain against
one measured gain (:class:`Row`), and the pairs measured on this machine with onnxruntime's CPU
sessions: batch 8 against batch 1 (launch), a QDQ int8 model by ``quantize_static`` against fp32
(precision), graph optimizations on against off (fusion), each predicted on a target calibrated
first, as benchmarks/validate_measured.py does (its model list, its calibration line).

The gain is the fraction of the per-inference time the change saves, 1 - t_after / t_before; the
two sessions of a pair take turns (``achieved.fastest_runs_s``) round after round, and the measured
gain is the median over the rounds of each round's gain.
"""

from __future__ import annotations

import copy
import os
import statistics
import tempfile
import zlib
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np
import onnx

import onnxroof
from onnxroof.findings.launch import BATCH_FACTOR, LAUNCH_SHARE
from onnxroof.measure import achieved, calibration as cal, machine
from onnxroof.measure.profile_run import random_inputs
from onnxroof.report.target_file import calibrated_target, render_target

from published.models import mobilenet_v2, resnet50
from validate_measured import MODELS as MEASURED_MODELS, calibration_text, source_of
from validate_published import shares

EXTENDED = "ORT_ENABLE_EXTENDED (fusions, no NCHWc layout)"
LAYOUT_TOO = ("ORT_ENABLE_ALL also moves the convolutions to the NCHWc layout, with reorder kernels, beside the "
              "fusions: the two sessions differ in more than the fusion change; the fusions alone are the "
              "ORT_ENABLE_EXTENDED row beside it")
NOISE = 0.02  # a predicted gain within ±2 % claims no change; so does a published one (no spread is published)
MISS = 0.10  # a miss: |error| over 10 points of the time before the change, or the sign wrong
# untimed runs of its own before each timed turn: MiniGoogLeNet (4.1 ms) run right after its batch-8
# session took 4.57, 4.30, 4.20, 4.15, 4.13 ms on its 1st..5th runs here, then held (4.12-4.15)
REWARM_S = 0.03


@dataclass
class Row:
    """One predicted gain against one measured gain."""

    kind: str  # launch | precision | fusion
    where: str  # "published" | "this machine"
    system: str
    model: str
    change: str  # "batch 1 → 8", "fp16 → int8", "graph optimizations off → on"
    measured: float  # the gain: 1 - t_after / t_before per inference
    predicted: float
    predicted_from: str  # the finding's record, or the re-analysis and why
    measured_from: str
    cause: str = ""  # filled for a miss
    spread: tuple[float, float] | None = None  # the per-round gains' (lowest, highest), measured here
    excluded: str = ""  # why the pair is left out of the acceptance figures (it stays in its table)

    @property
    def error(self) -> float:
        return self.predicted - self.measured

    @property
    def no_sign(self) -> bool:
        """The measurement cannot tell the gain from zero: its rounds' spread crosses zero; a
        published gain (one figure a side, no spread published) when it is within ±NOISE."""
        if self.spread is not None:
            return self.spread[0] <= 0.0 <= self.spread[1]
        return abs(self.measured) <= NOISE

    @property
    def sign_right(self) -> bool:
        if self.no_sign:
            return True  # nothing measured to get the sign of
        return self.predicted * self.measured > 0  # the criterion: the sign, however small

    @property
    def miss(self) -> bool:
        return not self.sign_right or abs(self.error) > MISS


def gain(before_s: float, after_s: float) -> float:
    """The fraction of the per-inference time a change saves."""
    return 1.0 - after_s / before_s


def launch_share(report) -> float:
    return sum(k.placement.overhead_s for k in report.nodes) / report.latency_s if report.latency_s else 0.0


def finding(reviewed, kind: str):
    """The finding of ``kind`` in a target's part of a review (``onnxroof.review(analysis).of(report)``), or None."""
    return next((f for f in reviewed.findings if f.kind == kind), None)


@dataclass
class LocalModel:
    label: str
    make: Callable[[int], onnx.ModelProto]  # the model at a batch, with weights onnxruntime can run
    options: dict = field(default_factory=dict)  # the analysis's own options (dims, phase)


def at_batch(model: onnx.ModelProto, batch: int) -> onnx.ModelProto:
    """The model with axis 0 of every input set to ``batch`` (the outputs' and value infos' left open)."""
    if batch == 1:
        return model
    changed = copy.deepcopy(model)
    stored = {t.name for t in changed.graph.initializer}
    for value in changed.graph.input:
        if value.name not in stored and value.type.tensor_type.shape.dim:
            value.type.tensor_type.shape.dim[0].dim_value = batch
    for value in changed.graph.output:
        if value.type.tensor_type.shape.dim:
            value.type.tensor_type.shape.dim[0].dim_param = "batch"
    del changed.graph.value_info[:]
    return changed


def with_weights(model: onnx.ModelProto) -> onnx.ModelProto:
    """The weight-free published model with its external weights filled in: He-initialised (so that
    activations keep their scale through 50 layers, never reaching the subnormal floats that slow
    a CPU down), seeded by name, so the same weights at every batch; 1-D ones (biases) zero."""
    for index, tensor in enumerate(model.graph.initializer):
        if tensor.data_location != onnx.TensorProto.EXTERNAL:
            continue
        dims = list(tensor.dims)
        rng = np.random.default_rng(zlib.crc32(tensor.name.encode()))
        if len(dims) == 1:
            values = np.zeros(dims, np.float32)
        else:
            fan_in = dims[0] if len(dims) == 2 else int(np.prod(dims[1:]))  # MatMul [in, out]; Conv [out, in, k, k]
            values = (rng.standard_normal(dims) * np.sqrt(2.0 / fan_in)).astype(np.float32)
        model.graph.initializer[index].CopyFrom(onnx.numpy_helper.from_array(values, tensor.name))
    return model


def local_models() -> tuple[list[LocalModel], list[str]]:
    """validate_measured.py's models that are here (the built-in examples, the corpus's when it is built),
    and ResNet-50 and MobileNet v2 from the published builders at small sizes with random weights,
    standing in for the corpus's ResNet-50 and MobileNet when it is not built."""
    models, skipped = [], []
    for label, spec, options in MEASURED_MODELS:
        found = source_of(spec)
        if found is None:
            skipped.append(f"{label}: not in the corpus (benchmarks/corpus/*.py builds it, with torch)")
            continue
        source, bindings = found
        proto = source if isinstance(source, onnx.ModelProto) else onnx.load(source)
        if "phase" in options:
            bindings.pop("dims", None)
        models.append(LocalModel(label, lambda b, p=proto: at_batch(p, b), {**bindings, **options}))
    cache: dict = {}

    def built(builder: Callable[[int], onnx.ModelProto], key: str) -> Callable[[int], onnx.ModelProto]:
        def make(batch: int) -> onnx.ModelProto:
            if (key, batch) not in cache:
                cache[(key, batch)] = with_weights(builder(batch))
            return cache[(key, batch)]
        return make

    models.append(LocalModel("ResNet-50 v1.5 at 96x96 (published builder, random weights)",
                             built(lambda b: resnet50(b, 96), "resnet50")))
    models.append(LocalModel("MobileNet v2 at 160x160 (published builder, random weights)",
                             built(lambda b: mobilenet_v2(b, 160), "mobilenet_v2")))
    return models, skipped


def quantized(model: onnx.ModelProto, folder: Path, activations: str = "QUInt8") -> onnx.ModelProto:
    """QDQ int8 by onnxruntime's quantize_static as the corpus's ResNet-50 QDQ is made (per-channel
    int8 weights, MinMax on 4 random inputs), after onnxruntime's own pre-processing
    (quant_pre_process: BatchNormalization folded into the Conv, as an exporter does). Activations
    uint8 (U8S8): with int8 activations (S8S8, the corpus's) onnxruntime's CPU optimizer here keeps
    the Convs in fp32 between DequantizeLinear nodes, which measures a missed fusion, not int8
    (each row counts the kernels onnxruntime ran for both)."""
    from onnxruntime.quantization import CalibrationMethod, QuantFormat, QuantType, quantize_static
    from onnxruntime.quantization.shape_inference import quant_pre_process

    from corpus.build_tools import _reader_class, quiet

    given, source, target = folder / "given.onnx", folder / "fp32.onnx", folder / "qdq.onnx"
    onnx.save(model, str(given))
    with quiet():
        quant_pre_process(str(given), str(source), skip_symbolic_shape=True)
    stored = {t.name for t in model.graph.initializer}
    value = next(v for v in model.graph.input if v.name not in stored)
    shape = tuple(d.dim_value for d in value.type.tensor_type.shape.dim)
    with quiet():
        quantize_static(str(source), str(target), _reader_class()(value.name, shape, n=4), quant_format=QuantFormat.QDQ,
                        per_channel=True, activation_type=getattr(QuantType, activations), weight_type=QuantType.QInt8,
                        calibrate_method=CalibrationMethod.MinMax)
    return onnx.load(str(target))


def kernels_run(model: onnx.ModelProto, folder: Path, threads: int) -> str:
    """The op types of the graph onnxruntime runs (ORT_ENABLE_ALL), most common first: '19 QLinearConv, ...'."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.log_severity_level = 3
    options.intra_op_num_threads = threads
    options.optimized_model_filepath = str(folder / "optimized.onnx")
    ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    counts = Counter(node.op_type for node in onnx.load(str(folder / "optimized.onnx")).graph.node)
    return ", ".join(f"{count} {op}" for op, count in counts.most_common(4))


def stored_int8(model: onnx.ModelProto) -> bool:
    return any(n.op_type in ("QuantizeLinear", "QLinearConv", "QLinearMatMul", "MatMulInteger") for n in model.graph.node)


@dataclass
class Timed:
    before_s: float  # median over the rounds of the fastest run of each round
    after_s: float
    gains: list[float]  # per round


def timed(before: tuple, after: tuple, rounds: int, budget_s: float, per: tuple[int, int] = (1, 1),
          also: tuple | None = None) -> tuple[Timed, Timed | None]:
    """The two (session, feeds) timed in turns, ``rounds`` times: each round the fastest batch of runs of
    each (achieved.fastest_runs_s); ``per`` divides each run's time (the batch: per inference). ``also``,
    a third session taking the same turns, is given as a second pair against ``before``."""
    sessions = [before, after] + ([also] if also else [])
    # each timed run after its own session's runs, as a model run over and over finds its caches
    turns = [achieved.fastest_runs_s(sessions, budget_s, rewarm_s=REWARM_S) for _ in range(rounds)]

    def pair(index: int) -> Timed:
        return Timed(statistics.median(t[0] for t in turns) / per[0], statistics.median(t[index] for t in turns) / per[1],
                     [gain(t[0] / per[0], t[index] / per[1]) for t in turns])
    return pair(1), pair(2) if also else None


def session_at(model: onnx.ModelProto, threads: int, level: str):
    """An onnxruntime CPU session at a graph optimization level (achieved.cpu_session has all or none)."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.log_severity_level = 3
    options.graph_optimization_level = getattr(ort.GraphOptimizationLevel, level)
    options.intra_op_num_threads = threads
    return ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])


DEPTHWISE_CASES = ((3, 32), (32, 32), (64, 28))  # (channels, side): ShallowNet separable's first conv; MobileNet-like ones


def depthwise_int8(threads: int, budget_s: float, target) -> str:
    """onnxruntime's seconds for one more 3x3 depthwise conv in a chain, fp32 against QDQ int8 (as
    quantize_static makes it), beside what the calibrated target predicts for int8 against fp32 at
    those channels (its depthwise figures by channels, efficiency.depthwise[.int8].by_columns)."""
    parts = []
    for channels, side in DEPTHWISE_CASES:
        shape, attributes = (1, channels, side, side), {"group": channels, "pads": [1, 1, 1, 1]}
        fp32 = achieved.chain_slope_s("Conv", shape, attributes, threads, budget_s)
        int8 = achieved.chain_slope_s("Conv", shape, attributes, threads, budget_s, builder=achieved.qdq_chain_model)
        # the compute roof's share: the int8 peak at its figure over the fp32 peak at its figure
        speedup = (target.peak_ops_per_s["int8"].value * target.efficiency_of("depthwise", "int8", channels)
                   / (target.peak_ops_per_s["fp32"].value * target.efficiency_of("depthwise", "fp32", channels)))
        parts.append(f"{channels} channels of {side}x{side}: fp32 {fp32 * 1e6:.1f} µs, int8 {int8 * 1e6:.1f} µs "
                     f"(measured {fp32 / int8:.2g}x the speed; the calibrated figures at {channels} channels "
                     f"predict {speedup:.2g}x)")
    return ("onnxruntime's 3x3 depthwise conv here, one more in a chain (QDQ int8 as quantize_static makes it), int8 "
            "against fp32: " + "; ".join(parts))


def local_rows(args, say: Callable[[str], None]) -> tuple[list[Row], list[str], str]:
    """Calibrate, then for every local model: batch 8 against 1, QDQ int8 against fp32, graph
    optimizations on against off, each measured with onnxruntime and predicted on the calibrated target."""
    say(f"calibrating for {args.seconds:g} s on {args.threads} thread(s) (load average {os.getloadavg()[0]:.2f})")
    calibration = cal.calibrate(seconds=args.seconds, threads=args.threads)
    models, skipped = local_models()
    rows: list[Row] = []
    loads = [os.getloadavg()[0]]
    system = f"this machine ({machine.cpu_model()}, onnxruntime CPU, {args.threads} thread(s))"
    depthwise = depthwise_int8(args.threads, args.budget, calibrated_target(calibration))
    say(depthwise)
    with tempfile.TemporaryDirectory(prefix="validate-findings-") as tmp:
        folder = Path(tmp)
        toml = folder / "this-machine.toml"
        toml.write_text(render_target(calibration, "this-machine"), encoding="utf-8")
        for model in models:
            try:
                rows += one_local_model(model, toml, folder, system, args, say, depthwise)
            except Exception as error:  # onnxruntime's own exception types; one model's failure is a line
                skipped.append(f"{model.label}: {type(error).__name__}: {str(error).splitlines()[0][:200]}")
                say(f"{model.label}: skipped: {error}")
            loads.append(os.getloadavg()[0])
    calibration_line = calibration_text(calibrated_target(calibration))
    note = (f"Calibrated for {args.seconds:g} s on {args.threads} thread(s): {calibration_line}. Load average "
            f"{min(loads):.2f}-{max(loads):.2f} during the runs ({machine.core_text()}, shared with other sessions); "
            f"each pair timed in {args.rounds} rounds of {args.budget:g} s, the two sessions taking turns, each turn "
            f"starting with {REWARM_S * 1e3:.0f} ms (one run at least) of untimed runs of its own session, so that a "
            "timed run finds the caches as its own runs leave them, as the prediction has it, not as the other "
            "session's run did (MiniGoogLeNet, 4.1 ms, right after its batch-8 session: 4.57, 4.30, 4.20, 4.15, 4.13 ms "
            f"on its 1st to 5th runs, then steady). {depthwise[0].upper()}{depthwise[1:]}.")
    return rows, skipped, note


def one_local_model(model: LocalModel, toml: Path, folder: Path, system: str, args, say, depthwise: str = "") -> list[Row]:
    one, eight = model.make(1), model.make(BATCH_FACTOR)
    base = onnxroof.analyze(one, targets=[str(toml)], search_order=False, **model.options)
    report = base.targets[0]
    reviewed = onnxroof.review(base).of(report)
    feeds_one = random_inputs(base)
    feeds_eight = random_inputs(onnxroof.analyze(eight, search_order=False, **model.options))
    session = lambda m, optimize=True: achieved.cpu_session(m, args.threads, optimize)  # noqa: E731
    rows = []

    # launch: batch 8 against batch 1, per inference
    measured, _ = timed((session(one), feeds_one), (session(eight), feeds_eight), args.rounds, args.budget,
                        (1, BATCH_FACTOR))
    f = finding(reviewed, "launch")
    analysed = lambda **change: onnxroof.analyze(one, targets=[str(toml)], search_order=False,  # noqa: E731
                                                 **change, **model.options).targets[0]
    other = analysed(batch=BATCH_FACTOR)  # the re-analysis, for the cause of a miss when the finding is made
    if f is not None and "larger_batch_latency_s" in f.evidence:
        after_s = f.evidence["larger_batch_latency_s"] / f.evidence["larger_batch"]
        how = f"the launch finding's evidence ({f.change}; gain_s {f.gain_s * 1e6:,.1f} µs)"
    else:
        after_s = other.latency_s / BATCH_FACTOR
        why = (f"no launch finding: launches are {launch_share(report):.0%} of the time (the finding needs "
               f"{LAUNCH_SHARE:.0%})" if f is None else f"the launch finding gives no gain: {f.detail}")
        how = f"re-analysis at batch {BATCH_FACTOR}: {why}"
    rows.append(local_row("launch", system, model.label, f"batch 1 → {BATCH_FACTOR}", report.latency_s, after_s, how,
                          measured, report, other))
    say(f"{model.label}: batch: predicted {rows[-1].predicted:+.0%}, measured {rows[-1].measured:+.0%}")

    # precision: QDQ int8 by quantize_static against fp32
    if not stored_int8(one):
        qdq = quantized(one, folder)
        measured, _ = timed((session(one), feeds_one), (session(qdq), feeds_one), args.rounds, args.budget)
        f = finding(reviewed, "precision")
        other = analysed(dtype="int8")
        if f is not None and "int8" in f.evidence.get("tried_s", {}):
            after_s, how = f.evidence["tried_s"]["int8"], f"the precision finding's tried_s ({f.change})"
        else:
            after_s = other.latency_s
            why = ("no int8 roof on the calibrated target" if "int8" not in report.target.peak_ops_per_s else
                   "no precision finding (its gain is under the finding's threshold)" if f is None else
                   f"the precision finding chose {f.evidence.get('dtype')}")
            how = f"re-analysis with --dtype int8: {why}"
        ran = (f"; onnxruntime ran {kernels_run(qdq, folder, args.threads)} (with int8 activations, S8S8: "
               f"{kernels_run(quantized(one, folder, 'QInt8'), folder, args.threads)})")
        rows.append(local_row("precision", system, model.label, "fp32 → QDQ int8 (quantize_static, U8S8)",
                              report.latency_s, after_s, how, measured, report, other, ran))
        if rows[-1].miss and rows[-1].error > 0 and any(k.placement.kernel_class == "depthwise" for k in report.nodes):
            rows[-1].cause = (f"the model's depthwise convs: {depthwise}; " + rows[-1].cause)
        say(f"{model.label}: int8: predicted {rows[-1].predicted:+.0%}, measured {rows[-1].measured:+.0%}")

    # fusion: onnxruntime's graph optimizations on against off; predicted from the unfused analysis
    # (and ORT_ENABLE_EXTENDED in the same turns: its fusions without the NCHWc layout of ORT_ENABLE_ALL)
    measured, extended = timed((session(one, False), feeds_one), (session(one, True), feeds_one), args.rounds,
                               args.budget, also=(session_at(one, args.threads, "ORT_ENABLE_EXTENDED"), feeds_one))
    unfused = onnxroof.analyze(one, targets=[str(toml)], search_order=False, fusion="none", **model.options)
    plain = unfused.targets[0]
    f = finding(onnxroof.review(unfused).of(plain), "fusion")
    other = analysed(fusion="all")
    if f is not None and f.gain_s:
        after_s = plain.latency_s - f.gain_s
        how = f"the fusion finding on the unfused analysis (gain_s {f.gain_s * 1e6:,.1f} µs; {len(f.nodes)} nodes merged)"
    else:
        after_s = other.latency_s
        how = ("re-analysis with --fusion all: " + ("no fusion finding on the unfused analysis" if f is None else
                                                     f"the fusion finding gives no gain: {f.detail[:120]}"))
    policy = ", ".join(report.fusion) or "none"
    how += (f"; under the calibrated target's own policy ({policy}, standing for onnxruntime's): "
            f"{gain(plain.latency_s, report.latency_s):+.0%}")
    rows.append(local_row("fusion", system, model.label, "graph optimizations off → on (ORT_DISABLE_ALL → ORT_ENABLE_ALL)",
                          plain.latency_s, after_s, how, measured, plain, other,
                          f"; ORT_ENABLE_EXTENDED (the fusions without ORT_ENABLE_ALL's NCHWc layout) "
                          f"{statistics.median(extended.gains):+.0%}"))
    rows[-1].excluded = LAYOUT_TOO
    # the fusions alone: no layout change, which no finding claims
    rows.append(local_row("fusion", system, model.label, f"graph optimizations off → {EXTENDED}", plain.latency_s,
                          after_s, how, extended, plain, other))
    say(f"{model.label}: fusion: predicted {rows[-1].predicted:+.0%}, measured {rows[-1].measured:+.0%}")
    return rows


def local_row(kind: str, system: str, label: str, change: str, before_s: float, after_s: float, how: str,
              measured: Timed, report, after, also_measured: str = "") -> Row:
    """``report`` and ``after``: the target's reports before and after the change (the cause of a miss)."""
    measured_gain = statistics.median(measured.gains)
    spread = f"[{min(measured.gains):+.0%}..{max(measured.gains):+.0%}]"
    row = Row(kind, "this machine", system, label, change, measured_gain, gain(before_s, after_s),
              f"{how}; predicted {before_s * 1e6:,.1f} → {after_s * 1e6:,.1f} µs per inference",
              f"{measured.before_s * 1e6:,.1f} → {measured.after_s * 1e6:,.1f} µs per inference (medians); "
              f"per round {spread}{also_measured}", spread=(min(measured.gains), max(measured.gains)))
    row.cause = local_cause(row, report) + "; " + class_change(report, after) if row.miss else ""
    return row


def class_change(before, after) -> str:
    """The kernel classes whose predicted time per inference the change moves most: 'gemm 4,410 → 5,290 µs'."""
    def by_class(report) -> dict:
        times: dict = {}
        for kernel in report.nodes:
            name = f"{kernel.placement.kernel_class or 'no class'} ({kernel.placement.bound})"
            times[name] = times.get(name, 0.0) + kernel.placement.time_s / max(report.batch, 1)
        return times
    first, second = by_class(before), by_class(after)
    moved = sorted(set(first) | set(second), key=lambda c: -abs(second.get(c, 0.0) - first.get(c, 0.0)))[:2]
    return "predicted per inference, by kernel class: " + "; ".join(
        f"{c} {first.get(c, 0.0) * 1e6:,.1f} → {second.get(c, 0.0) * 1e6:,.1f} µs" for c in moved)


def local_cause(row: Row, report) -> str:
    """Why a pair measured on this machine misses: what the prediction keeps that onnxruntime changes."""
    parts = []
    if row.kind == "launch":
        parts.append("the prediction gives batch 8 " + ("less than" if row.error < 0 else "more than") + " onnxruntime's "
                     "kernels gain on 8 times the rows; the kernel classes named last carry the difference, set by "
                     "the calibrated figures at batch 8's sizes (efficiency by rows, the on-chip capacity, the DRAM "
                     "stall: the calibration line below)")
    elif row.kind == "precision":
        int8 = report.target.peak_ops_per_s.get("int8")
        ratio = f" ({int8.value / report.target.peak_ops_per_s['fp32'].value:.1f}x the fp32 roof)" if int8 else ""
        parts.append("--dtype int8 re-costs every op in int8 at the calibrated int8 roof" + ratio + ", where onnxruntime "
                     "runs the kernels counted beside the measurement: its QuantizeLinear/DequantizeLinear and layout "
                     "conversions add time the re-analysis does not have" if row.error > 0 else
                     "onnxruntime's int8 kernels run above the calibrated int8 efficiency")
    elif "EXTENDED" in row.change:
        parts.append("the finding fuses every rule set (elementwise chains, horizontal GEMMs), more than onnxruntime's "
                     "CPU optimizer does" if row.error > 0 else
                     "onnxruntime's fused kernels (FusedConv with its activation, BatchNormalization folded into the "
                     "weights) save more than the launches and bytes the finding counts")
    else:
        parts.append("ORT_ENABLE_ALL also runs the convolutions in the NCHWc layout (ORT_DISABLE_ALL leaves them "
                     "plain): a change of kernels no finding claims; the fusions alone are the ORT_ENABLE_EXTENDED row"
                     if row.error < 0 else
                     "the finding fuses every rule set (elementwise chains, horizontal GEMMs), more than onnxruntime's "
                     "CPU optimizer does")
    parts.append(f"predicted bounds before: {shares(report)}")
    return "; ".join(parts)
