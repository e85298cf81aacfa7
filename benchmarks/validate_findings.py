#!/usr/bin/env python3
"""Each finding's predicted gain against a measured one (issue 42, item 6): for every finding
kind that claims a gain, the gain onnxroof predicts beside a gain someone measured, the signed
error and, for every miss, its cause.

The gain, on both sides: the fraction of the time of one inference that the change saves,
1 - t_after / t_before (what a finding prints as "saves ... (87%)": ``gain_s / latency_s``). Its
error is predicted - measured, in points of the time before the change.

- **Published rows of the same system** (the shared CSV, benchmarks/published/*.csv):
  *launch* (batch up): a system's SingleStream row (batch 1) against its MultiStream (batch 8) and
  Offline (the harness's batch) rows, and TensorRT's BERT demo at batch 1, 8 and 128; *precision*:
  the same system's BERT rows in fp16 (or fp16 with fp8) and int8. Each row is modelled and
  predicted by validate_published.py (its builders, its mapping, its BERT length weighting): one owner.
- **This machine** with onnxruntime (CPU, calibrated first as validate_measured.py does): batch 8
  against batch 1 (*launch*), a QDQ int8 model made by onnxruntime's ``quantize_static`` against
  fp32 (*precision*), graph optimizations on against off (*fusion*). The two sessions take turns
  (``achieved.fastest_runs_s``), round after round; the measured gain is the median over the rounds.

The predicted gain is read from the finding where the finding is made (its ``gain_s``,
``evidence`` and ``change``: the launch finding's batch x8 and x64, the precision finding's
``tried_s`` per type, the fusion finding's ``latency_s_after``) and otherwise from the re-analysis
at the measured setting directly; each row says which, and why when the finding is not made.

    python benchmarks/validate_findings.py [--seconds 30] [--threads 1] [--rounds 9] [--budget 0.5]
                                          [--skip-local] [--skip-published] [--write]

--write replaces docs/validation-findings.md. The whole run takes about 5-10 minutes.
"""

from __future__ import annotations

import argparse
import copy
import os
import statistics
import sys
import tempfile
import time
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np
import onnx

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path[:0] = [str(REPO), str(HERE)]  # this checkout's onnxroof (not an installed one), and the benchmarks' modules

import onnxroof  # noqa: E402
from onnxroof.findings.launch import BATCH_FACTOR, FURTHER_FACTOR, LAUNCH_SHARE  # noqa: E402
from onnxroof.measure import achieved, calibration as cal, machine  # noqa: E402
from onnxroof.measure.profile_run import random_inputs  # noqa: E402
from onnxroof.report.target_file import calibrated_target, render_target  # noqa: E402

from generated_docs import environment  # noqa: E402
from published.models import mobilenet_v2, resnet50  # noqa: E402
from validate_measured import MODELS as MEASURED_MODELS, calibration_text, source_of  # noqa: E402
from validate_published import (  # noqa: E402
    CSV, Outcome, Runner, decide, numbered_rows, predict, shares, short_target, unseen_rows,
)

DOC = REPO / "docs" / "validation-findings.md"
NOISE = 0.02  # a gain within ±2 % has no sign: below what a published or a shared-machine figure repeats to
MISS = 0.10  # a miss: |error| over 10 points of the time before the change, or the sign wrong


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

    @property
    def error(self) -> float:
        return self.predicted - self.measured

    @property
    def sign_right(self) -> bool:
        if abs(self.measured) <= NOISE:
            return True  # nothing measured to get the sign of
        return self.predicted * self.measured > 0 and abs(self.predicted) > NOISE

    @property
    def miss(self) -> bool:
        return not self.sign_right or abs(self.error) > MISS


def gain(before_s: float, after_s: float) -> float:
    """The fraction of the per-inference time a change saves."""
    return 1.0 - after_s / before_s


# ---------------------------------------------------------------- published rows


def system_key(row: dict) -> str | None:
    """The measured system a row belongs to: the MLPerf submission's system folder, or the document."""
    source = row["source"]
    if "/results/" in source:
        repo, rest = source.split("/results/", 1)
        return f"{repo.split(':')[0]}:{rest.split('/')[0]}"
    if "demo/BERT" in source:
        return "NVIDIA/TensorRT demo/BERT"
    return None


def per_inference_s(o: Outcome, value: float) -> float:
    """Seconds of one inference from a row's figure (predicted or measured): ms per batch, or samples/s."""
    return value / 1e3 / o.spec.batch if o.spec.kind == "latency" else 1.0 / value


def statistic(o: Outcome) -> str:
    metric = o.row["metric"]
    return "p99" if "p99" in metric else "p90" if "p90" in metric else "mean"


def launch_share(report) -> float:
    return sum(k.placement.overhead_s for k in report.nodes) / report.latency_s if report.latency_s else 0.0


def finding(report, kind: str):
    return next((f for f in report.findings if f.kind == kind), None)


def launch_after(o: Outcome, factor: int) -> tuple[float | None, str]:
    """Seconds per inference at ``factor`` x the batch, read off the launch finding of every analysis
    the row's prediction sums; None and why when a finding is not made or does not analyse it."""
    afters = {}
    for _, report in o.terms:
        f = finding(report, "launch")
        if f is None:
            return None, (f"no launch finding: launches are {launch_share(report):.0%} of the time at batch "
                          f"{report.batch} (the finding needs {LAUNCH_SHARE:.0%})")
        evidence = f.evidence
        key = {BATCH_FACTOR: "larger_batch", FURTHER_FACTOR: "further_batch"}.get(factor)
        if key is None:
            return None, f"the launch finding analyses batch x{BATCH_FACTOR} and x{FURTHER_FACTOR}, not x{factor}"
        if f"{key}_latency_s" not in evidence:
            return None, f"the launch finding gives no gain at batch x{factor}: {f.detail}"
        afters[id(report)] = evidence[f"{key}_latency_s"] / evidence[key] * report.batch  # per run of the base's batch
    after = o.evaluate(lambda report: afters[id(report)])
    first = finding(o.terms[0][1], "launch")
    return per_inference_s(o, after), f"the launch finding's evidence at batch x{factor} ({first.change} and beyond)"


def precision_after(o: Outcome, dtype: str) -> tuple[float | None, str]:
    """Seconds per inference in ``dtype``, read off the precision finding's ``tried_s``."""
    tried = {}
    for _, report in o.terms:
        f = finding(report, "precision")
        if dtype not in report.target.peak_ops_per_s:
            return None, f"no precision finding: {report.target.name} has no {dtype} roof"
        if f is None or dtype not in f.evidence.get("tried_s", {}):
            return None, (f"no precision finding for {dtype} (its gain is under the finding's threshold, or another "
                          "type won)" if f is None else f"the precision finding did not try {dtype}")
        tried[id(report)] = f.evidence["tried_s"][dtype] * report.batch
    after = o.evaluate(lambda report: tried[id(report)])
    first = finding(o.terms[0][1], "precision")
    return per_inference_s(o, after), f"the precision finding's tried_s ({first.change})"


def published_pairs(rows: list[tuple[str, dict]]) -> tuple[list[tuple[str, Outcome, Outcome]], list[str], list[Outcome]]:
    """(kind, before, after) pairs of rows of the same system, each decided; the rows left out, why;
    and every row decided."""
    decided: list[Outcome] = []
    apart: list[str] = []
    for index, row in rows:
        key = system_key(row)
        if key is None:
            continue
        o = Outcome(index, row)
        spec = decide(row)
        if isinstance(spec, str):
            apart.append(f"#{index} {short_target(row)}, {row['model']}, {row['scenario']}: {spec}")
            continue
        o.spec = spec
        decided.append(o)
    pairs = []
    for base in decided:
        for other in decided:
            if other is base or system_key(other.row) != system_key(base.row) or other.spec.family != base.spec.family:
                continue
            same_length = base.spec.lengths.startswith("fixed") == other.spec.lengths.startswith("fixed") and \
                (not base.spec.lengths.startswith("fixed") or base.spec.lengths == other.spec.lengths)
            if not same_length:
                continue
            if base.spec.batch == 1 and other.spec.batch > 1 and other.spec.dtype == base.spec.dtype \
                    and base.spec.kind == "latency":
                pairs.append(("launch", base, other))
            elif base.spec.dtype in ("fp16", "fp8") and other.spec.dtype == "int8" and \
                    base.row["scenario"] == other.row["scenario"] and \
                    (base.spec.kind != "latency" or base.spec.batch == other.spec.batch):
                pairs.append(("precision", base, other))
    return pairs, apart, decided


def published_rows(runner: Runner, say: Callable[[str], None]) -> tuple[list[Row], list[str]]:
    rows = numbered_rows(CSV, extra=True) + unseen_rows()
    pairs, apart, decided = published_pairs(rows)
    found = []
    for kind, before, after in pairs:
        for o in (before, after):
            if o.predicted is None:
                predict(o, runner)
        t_before, t_after = per_inference_s(before, before.predicted), per_inference_s(after, after.predicted)
        measured = gain(per_inference_s(before, before.measured), per_inference_s(after, after.measured))
        if kind == "launch":
            change = f"batch {before.spec.batch} → {after.spec.batch}"
            from_finding, why = launch_after(before, after.spec.batch // before.spec.batch)
        else:
            change = f"{before.spec.dtype} → {after.spec.dtype}" + (f" at batch {before.spec.batch}" if before.spec.kind == "latency" else "")
            from_finding, why = precision_after(before, after.spec.dtype)
            if from_finding is not None and after.spec.batch != before.spec.batch:
                why += f", at the {before.spec.dtype} row's batch {before.spec.batch} (the int8 row ran {after.spec.batch})"
        direct = gain(t_before, t_after)
        if from_finding is not None:
            predicted, how = gain(t_before, from_finding), why
            if abs(predicted - direct) > 0.05:
                how += (f"; the model built at the measured setting and analysed directly gives {direct:+.0%}, "
                        f"not the finding's {predicted:+.0%}")
        else:
            predicted = gain(t_before, t_after)
            how = f"re-analysis ({after.spec.how}): {why}"
        measured_from = (f"#{before.index} {before.row['scenario']} {statistic(before)} {before.measured:g} {before.unit}"
                         f" → #{after.index} {after.row['scenario']} {statistic(after) if after.spec.kind == 'latency' else ''}"
                         f" {after.measured:g} {after.unit}").replace("  ", " ")
        row = Row(kind, "published", f"{short_target(before.row)} ({system_key(before.row)})",
                  before.spec.model, change, measured, predicted, how, measured_from)
        row.cause = published_cause(row, before, after, direct, decided) if row.miss else ""
        say(f"{kind} {row.system[:40]} {row.model} {change}: predicted {predicted:+.0%}, measured {measured:+.0%}")
        found.append(row)
    return found, apart


def time_error(o: Outcome) -> float:
    """The row's own error as predicted / measured time per inference - 1 (negative: predicted too fast)."""
    return per_inference_s(o, o.predicted) / per_inference_s(o, o.measured) - 1.0


def published_cause(row: Row, before: Outcome, after: Outcome, direct: float, decided: list[Outcome]) -> str:
    """Why a published pair misses: what the two measurements or the model leave out, each row's own
    error, and the predicted time's bounds at both settings."""
    parts = []
    faster_after = row.error > 0  # predicted the changed setting too fast
    if abs(row.predicted - direct) > 0.05:
        parts.append(f"the finding re-analyses the graph built at batch {before.spec.batch} with --batch "
                     f"{after.spec.batch}, and that graph fixes the batch in its Reshape shapes: the re-analysis is "
                     f"incomplete (issue 42, item 1) and its gain is the time of the nodes it counted; the graph built "
                     f"at batch {after.spec.batch} gives {direct:+.0%}")
    peers = [float(o.row["per_accelerator_value"] or o.row["value"]) for o in decided if o is not before and o.spec.target == before.spec.target
             and o.spec.family == before.spec.family and o.spec.dtype == before.spec.dtype
             and o.row["scenario"] == before.row["scenario"] and statistic(o) == statistic(before)
             and o.spec.batch == before.spec.batch and o.spec.lengths == before.spec.lengths]
    if len(peers) >= 2 and abs(before.measured / statistics.median(peers) - 1) > 0.15:
        parts.append(f"the {before.row['scenario']} figure ({before.measured:g} {before.unit}) is "
                     f"{before.measured / statistics.median(peers) - 1:+.0%} off the median of the other "
                     f"{len(peers)} submissions of the same chip and model ({statistics.median(peers):g}), while the "
                     "prediction is the same for all")
    if statistic(after) == "p99" and statistic(before) != "p99":
        parts.append(f"the batch-8 figure is MultiStream's 99th percentile against SingleStream's {statistic(before)}: "
                     "a tail, so the measured gain is understated")
    if before.spec.family == "retinanet":
        parts.append("MLPerf times RetinaNet's box decoding and NMS per sample (a plugin the graph does not have), "
                     "which batching does not amortize")
    if row.kind == "precision" and before.spec.dtype == "fp8" and "fp16" in before.row["precision"]:
        parts.append(f"the fp8 row runs '{before.row['precision']}': fp16 with fp8 in some GEMMs only, predicted "
                     "as all fp8 (validate_published.py's mapping), which has int8's roof and bytes, so no gain is "
                     "predicted; the measured int8 gain is what the fp16 layers lose")
    if row.kind == "precision" and faster_after and "mixed" in after.row["precision"]:
        parts.append(f"the int8 row runs '{after.row['precision']}': only part of the time moves to the int8 "
                     "roof, where --dtype int8 re-costs every layer in int8")
    for o, when in ((before, "before"), (after, "after")):
        if o.cause:  # validate_published.py's own cause for a row it misses by over 25 %
            parts.append(f"the row {when} the change (#{o.index}) is itself a miss: {o.cause}")
    parts.append(f"each row's own time error: {time_error(before):+.0%} before, {time_error(after):+.0%} after; "
                 f"predicted bounds before: {shares(before.terms[-1][1])}; after: {shares(after.terms[-1][1])}")
    return "; ".join(parts)


# ---------------------------------------------------------------- this machine


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


def quantized(model: onnx.ModelProto, folder: Path) -> onnx.ModelProto:
    """QDQ int8 by onnxruntime's quantize_static, as the corpus's ResNet-50 QDQ is made (per-channel
    int8 weights, int8 activations, MinMax on 4 random inputs), after onnxruntime's own
    pre-processing (quant_pre_process: BatchNormalization folded into the Conv, as an exporter does,
    so that no fp32 BatchNormalization sits between a DequantizeLinear and a QuantizeLinear)."""
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
                        per_channel=True, activation_type=QuantType.QInt8, weight_type=QuantType.QInt8,
                        calibrate_method=CalibrationMethod.MinMax)
    return onnx.load(str(target))


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
    turns = [achieved.fastest_runs_s(sessions, budget_s) for _ in range(rounds)]

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


def local_rows(args, say: Callable[[str], None]) -> tuple[list[Row], list[str], str]:
    """Calibrate, then for every local model: batch 8 against 1, QDQ int8 against fp32, graph
    optimizations on against off, each measured with onnxruntime and predicted on the calibrated target."""
    say(f"calibrating for {args.seconds:g} s on {args.threads} thread(s) (load average {os.getloadavg()[0]:.2f})")
    calibration = cal.calibrate(seconds=args.seconds, threads=args.threads)
    models, skipped = local_models()
    rows: list[Row] = []
    loads = [os.getloadavg()[0]]
    system = f"this machine ({machine.cpu_model()}, onnxruntime CPU, {args.threads} thread(s))"
    with tempfile.TemporaryDirectory(prefix="validate-findings-") as tmp:
        folder = Path(tmp)
        toml = folder / "this-machine.toml"
        toml.write_text(render_target(calibration, "this-machine"), encoding="utf-8")
        for model in models:
            try:
                rows += one_local_model(model, toml, folder, system, args, say)
            except Exception as error:  # onnxruntime's own exception types; one model's failure is a line
                skipped.append(f"{model.label}: {type(error).__name__}: {str(error).splitlines()[0][:200]}")
                say(f"{model.label}: skipped: {error}")
            loads.append(os.getloadavg()[0])
    calibration_line = calibration_text(calibrated_target(calibration))
    note = (f"Calibrated for {args.seconds:g} s on {args.threads} thread(s): {calibration_line}. Load average "
            f"{min(loads):.2f}-{max(loads):.2f} during the runs ({machine.core_text()}, shared with other sessions); "
            f"each pair timed in {args.rounds} rounds of {args.budget:g} s, the two sessions taking turns.")
    return rows, skipped, note


def one_local_model(model: LocalModel, toml: Path, folder: Path, system: str, args, say) -> list[Row]:
    one, eight = model.make(1), model.make(BATCH_FACTOR)
    base = onnxroof.analyze(one, targets=[str(toml)], search_order=False, **model.options)
    base.review()
    report = base.targets[0]
    feeds_one = random_inputs(base)
    feeds_eight = random_inputs(onnxroof.analyze(eight, search_order=False, **model.options))
    session = lambda m, optimize=True: achieved.cpu_session(m, args.threads, optimize)  # noqa: E731
    rows = []

    # launch: batch 8 against batch 1, per inference
    measured, _ = timed((session(one), feeds_one), (session(eight), feeds_eight), args.rounds, args.budget,
                        (1, BATCH_FACTOR))
    f = finding(report, "launch")
    if f is not None and "larger_batch_latency_s" in f.evidence:
        after_s = f.evidence["larger_batch_latency_s"] / f.evidence["larger_batch"]
        how = f"the launch finding's evidence ({f.change}; gain_s {f.gain_s * 1e6:,.1f} µs)"
    else:
        other = onnxroof.analyze(one, targets=[str(toml)], search_order=False, batch=BATCH_FACTOR, **model.options)
        after_s = other.targets[0].latency_s / BATCH_FACTOR
        why = (f"no launch finding: launches are {launch_share(report):.0%} of the time (the finding needs "
               f"{LAUNCH_SHARE:.0%})" if f is None else f"the launch finding gives no gain: {f.detail}")
        how = f"re-analysis at batch {BATCH_FACTOR}: {why}"
    rows.append(local_row("launch", system, model.label, f"batch 1 → {BATCH_FACTOR}", report.latency_s, after_s, how,
                          measured, report))
    say(f"{model.label}: batch: predicted {rows[-1].predicted:+.0%}, measured {rows[-1].measured:+.0%}")

    # precision: QDQ int8 by quantize_static against fp32
    if not stored_int8(one):
        qdq = quantized(one, folder)
        measured, _ = timed((session(one), feeds_one), (session(qdq), feeds_one), args.rounds, args.budget)
        f = finding(report, "precision")
        if f is not None and "int8" in f.evidence.get("tried_s", {}):
            after_s, how = f.evidence["tried_s"]["int8"], f"the precision finding's tried_s ({f.change})"
        else:
            other = onnxroof.analyze(one, targets=[str(toml)], search_order=False, dtype="int8", **model.options)
            after_s = other.targets[0].latency_s
            why = ("no int8 roof on the calibrated target" if "int8" not in report.target.peak_ops_per_s else
                   "no precision finding (its gain is under the finding's threshold)" if f is None else
                   f"the precision finding chose {f.evidence.get('dtype')}")
            how = f"re-analysis with --dtype int8: {why}"
        rows.append(local_row("precision", system, model.label, "fp32 → QDQ int8 (quantize_static)", report.latency_s,
                              after_s, how, measured, report))
        say(f"{model.label}: int8: predicted {rows[-1].predicted:+.0%}, measured {rows[-1].measured:+.0%}")

    # fusion: onnxruntime's graph optimizations on against off; predicted from the unfused analysis
    # (and ORT_ENABLE_EXTENDED in the same turns: its fusions without the NCHWc layout of ORT_ENABLE_ALL)
    measured, extended = timed((session(one, False), feeds_one), (session(one, True), feeds_one), args.rounds,
                               args.budget, also=(session_at(one, args.threads, "ORT_ENABLE_EXTENDED"), feeds_one))
    unfused = onnxroof.analyze(one, targets=[str(toml)], search_order=False, fusion="none", **model.options)
    unfused.review()
    plain = unfused.targets[0]
    f = finding(plain, "fusion")
    if f is not None and f.gain_s:
        after_s = plain.latency_s - f.gain_s
        how = f"the fusion finding on the unfused analysis (gain_s {f.gain_s * 1e6:,.1f} µs; {len(f.nodes)} nodes merged)"
    else:
        other = onnxroof.analyze(one, targets=[str(toml)], search_order=False, fusion="all", **model.options)
        after_s = other.targets[0].latency_s
        how = ("re-analysis with --fusion all: " + ("no fusion finding on the unfused analysis" if f is None else
                                                     f"the fusion finding gives no gain: {f.detail[:120]}"))
    policy = ", ".join(report.fusion) or "none"
    how += (f"; under the calibrated target's own policy ({policy}, standing for onnxruntime's): "
            f"{gain(plain.latency_s, report.latency_s):+.0%}")
    rows.append(local_row("fusion", system, model.label, "graph optimizations off → on (ORT_DISABLE_ALL → ORT_ENABLE_ALL)",
                          plain.latency_s, after_s, how, measured, plain,
                          f"; ORT_ENABLE_EXTENDED (the fusions without ORT_ENABLE_ALL's NCHWc layout) "
                          f"{statistics.median(extended.gains):+.0%}"))
    say(f"{model.label}: fusion: predicted {rows[-1].predicted:+.0%}, measured {rows[-1].measured:+.0%}")
    return rows


def local_row(kind: str, system: str, label: str, change: str, before_s: float, after_s: float, how: str,
              measured: Timed, report, also_measured: str = "") -> Row:
    measured_gain = statistics.median(measured.gains)
    spread = f"[{min(measured.gains):+.0%}..{max(measured.gains):+.0%}]"
    row = Row(kind, "this machine", system, label, change, measured_gain, gain(before_s, after_s),
              f"{how}; predicted {before_s * 1e6:,.1f} → {after_s * 1e6:,.1f} µs per inference",
              f"{measured.before_s * 1e6:,.1f} → {measured.after_s * 1e6:,.1f} µs per inference (medians); "
              f"per round {spread}{also_measured}")
    row.cause = local_cause(row, report) if row.miss else ""
    return row


def local_cause(row: Row, report) -> str:
    """Why a pair measured on this machine misses."""
    parts = []
    if row.kind == "launch":
        parts.append("onnxruntime at batch 8 runs some kernels at a better efficiency than the calibrated one-size "
                     "figures (larger GEMMs), or worse (activations that leave the cache)"
                     if row.error < 0 else
                     "batch 8's activations leave the cache, or its kernels split differently, where the prediction "
                     "keeps batch 1's efficiencies")
    elif row.kind == "precision":
        parts.append("onnxruntime's QDQ model keeps some ops in fp32 between QuantizeLinear/DequantizeLinear pairs "
                     "(softmax, pooling, the graph's first and last layers' conversions), which --dtype int8 costs "
                     "as int8 throughout" if row.error > 0 else
                     "onnxruntime's int8 kernels (VNNI where the CPU has it) run above the calibrated int8 efficiency")
    else:
        parts.append("ORT_DISABLE_ALL also drops the NCHWc layout onnxruntime's convolutions run in, so the unfused "
                     "kernels are slower than the calibrated (optimized) efficiencies say; ORT_ENABLE_ALL also folds "
                     "constants and BatchNormalization" if row.error < 0 else
                     "the finding fuses every rule set (elementwise chains, horizontal GEMMs), more than onnxruntime's "
                     "CPU optimizer does")
    parts.append(f"predicted bounds before: {shares(report)}")
    return "; ".join(parts)


# ---------------------------------------------------------------- the document


NOT_VALIDATED = [
    ("spill", "its change is the lowest-peak execution order (--emit-order) or half the batch on a target that "
              "spills activations off chip; no published row runs one model in two execution orders, and onnxruntime "
              "on this CPU has caches, not a scratchpad it spills from, so no measurement here isolates it"),
    ("weights", "its change is room on chip for every parameter, on targets that keep weights resident (Coral, Hailo); "
                "no published row measures one model on such a chip with and without room for its weights"),
    ("subnormal", "its change is flushing subnormals to zero in onnxruntime; it needs a masked decoder from the "
                  "corpus (benchmarks/corpus, built with torch, not installed here): not measured in this run"),
    ("intensity, largest", "no change to measure: they point at where the time goes (what is at stake), not at a "
                           "setting that saves it"),
    ("capacity", "it saves memory (bytes), not time"),
]


def percent(x: float) -> str:
    return f"{x:+.0%}"


def cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def table(rows: list[Row]) -> str:
    head = ["#", "where", "system", "model", "change", "measured gain", "predicted gain", "error (points)",
            "predicted from", "measured from", "cause of a miss"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for number, r in enumerate(rows, 1):
        error = f"**{r.error * 100:+.0f}**" if r.miss else f"{r.error * 100:+.0f}"
        sign = "" if r.sign_right else " (sign wrong)"
        cells = [number, r.where, r.system, r.model, r.change, percent(r.measured), percent(r.predicted) + sign, error,
                 r.predicted_from, r.measured_from, r.cause]
        lines.append("| " + " | ".join(cell(c) for c in cells) + " |")
    return "\n".join(lines)


def summary_lines(rows: list[Row]) -> list[str]:
    lines = []
    for kind in ("launch", "precision", "fusion"):
        mine = [r for r in rows if r.kind == kind]
        if not mine:
            lines.append(f"- **{kind}**: no row")
            continue
        errors = [abs(r.error) for r in mine]
        wrong = [r for r in mine if not r.sign_right]
        misses = [r for r in mine if r.miss]
        by_source = "; ".join(f"{where} {len(v)} (median |error| {statistics.median(abs(r.error) for r in v) * 100:.0f} points)"
                              for where in ("published", "this machine")
                              if (v := [r for r in mine if r.where == where]))
        lines.append(f"- **{kind}**: {len(mine)} rows ({by_source}); median |gain error| "
                     f"{statistics.median(errors) * 100:.0f} points; sign wrong in {len(wrong)}"
                     + (f" ({', '.join(f'{r.model}, {r.change}' for r in wrong)})" if wrong else "")
                     + f"; misses (over {MISS * 100:.0f} points or the sign wrong): {len(misses)}")
    if rows:
        errors = [abs(r.error) for r in rows]
        lines.append(f"- **all kinds**: {len(rows)} rows; median |gain error| {statistics.median(errors) * 100:.0f} "
                     f"points; sign wrong in {sum(not r.sign_right for r in rows)}; within ±10 points: "
                     f"{sum(e <= MISS for e in errors)}; within ±25 points: {sum(e <= 0.25 for e in errors)}")
    return lines


def document(rows: list[Row], apart: list[str], skipped: list[str], local_note: str, args, seconds: float) -> str:
    parts = [
        "# Findings validated: predicted gains against measured gains",
        "",
        "Generated by `python benchmarks/validate_findings.py"
        + (f" --seconds {args.seconds:g} --threads {args.threads} --rounds {args.rounds} --budget {args.budget:g}"
           if not args.skip_local else " --skip-local") + (" --skip-published" if args.skip_published else "")
        + f" --write` ({seconds:.0f} s). " + environment(REPO),
        "",
        "**The gain**, on both sides: the fraction of the time of one inference that the change saves, "
        "`1 - t_after / t_before` (per inference: a run's time over its batch). It is what a finding prints as "
        "`saves X per inference (87%)`, `gain_s / latency_s`. **The error** is predicted gain - measured gain, in "
        "points of the time before the change (+: the prediction promises more than was measured). A measured gain "
        f"within ±{NOISE:.0%} has no sign; elsewhere the sign is right when the predicted gain is on the same side and "
        f"beyond ±{NOISE:.0%}. A **miss**: |error| over {MISS * 100:.0f} points, or the sign wrong; each has its cause.",
        "",
        "**Predicted from**: the finding's own record where the finding is made on the analysis before the change "
        "(launch: `evidence` at batch x8 and x64, the finding's `change`; precision: `evidence['tried_s']`; fusion: "
        "`gain_s`), else the re-analysis at the measured setting directly, and the row says why the finding gave "
        "nothing. Published rows are modelled by `benchmarks/validate_published.py` (its builders, its row-to-model "
        "mapping, the harness batch of an Offline row, the SQuAD length weighting of BERT), so a pair's two predictions "
        "are the two rows' own predictions in docs/validation-published.md.",
        "",
        "**Measured**: published rows of one system (the same MLPerf submission folder, or TensorRT's BERT demo "
        "table), per inference: SingleStream's latency, MultiStream's latency of a query of 8 over 8, Offline's 1 / "
        "throughput (per accelerator). On this machine, onnxruntime's CPU sessions of the two models (batch 1 and "
        "batch 8; fp32 and its QDQ int8 by `quantize_static`; graph optimizations off and on), timed in turns.",
        "",
        "## Summary",
        "",
        *summary_lines(rows),
        "",
    ]
    for kind in ("launch", "precision", "fusion"):
        mine = [r for r in rows if r.kind == kind]
        parts += [f"## {kind}", "", table(mine) if mine else "No row.", ""]
    if local_note:
        parts += ["### This machine", "", local_note, ""]
    parts += ["## Kinds not validated, and why", ""]
    parts += [f"- **{kind}**: {why}" for kind, why in NOT_VALIDATED]
    if skipped:
        parts += ["", "## Local models not run", ""] + [f"- {s}" for s in skipped]
    if apart:
        parts += ["", "## Published rows of a system with a pair that validate_published.py does not compare", ""]
        parts += [f"- {a}" for a in apart]
    return "\n".join(parts) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=30.0, help="calibration time (default 30)")
    ap.add_argument("--threads", type=int, default=1, help="threads for calibration and onnxruntime (default 1)")
    ap.add_argument("--rounds", type=int, default=9, help="rounds of turns per measured pair (default 9)")
    ap.add_argument("--budget", type=float, default=0.5, help="seconds per round (default 0.5)")
    ap.add_argument("--skip-local", action="store_true", help="no measurement on this machine")
    ap.add_argument("--skip-published", action="store_true", help="no published rows")
    ap.add_argument("--write", action="store_true", help=f"write {DOC.relative_to(REPO)}")
    args = ap.parse_args(argv)
    say = lambda text: print(text, file=sys.stderr, flush=True)  # noqa: E731
    start = time.perf_counter()
    rows: list[Row] = []
    apart: list[str] = []
    skipped: list[str] = []
    note = ""
    if not args.skip_published:
        with tempfile.TemporaryDirectory(prefix="published-models-") as tmp:
            found, apart = published_rows(Runner(Path(tmp), findings=True), say)
            rows += found
    if not args.skip_local:
        found, skipped, note = local_rows(args, say)
        rows += found
    text = document(rows, apart, skipped, note, args, time.perf_counter() - start)
    print(text)
    if args.write:
        DOC.write_text(text, encoding="utf-8")
        say(f"wrote {DOC}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
