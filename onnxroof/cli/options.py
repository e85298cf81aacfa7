"""The flags the analysing commands share (summary, report, explain, diff, compare, check), in
the groups --help shows, and each command's examples; :mod:`onnxroof.cli.app` builds the parser."""

from __future__ import annotations

import argparse
import math
from dataclasses import replace

from ..options import MAX_DEVICES, AnalysisOptions


def analysis_options(parser: argparse.ArgumentParser) -> None:
    """How a model is costed: the same flags for one model or several, in groups as --help shows them."""
    shapes = parser.add_argument_group("shapes and values (a batch dim left open is 1; any other open dim exits 2)")
    shapes.add_argument("--input-shape", action="append", default=[], metavar="NAME:D1,D2,...",
                        help="set an input's shape, e.g. input:1,3,224,224 or input:1x3x224x224 (repeatable)")
    shapes.add_argument("--dim", action="append", default=[], metavar="SYMBOL=VALUE",
                        help="bind a named (symbolic) dim everywhere, e.g. batch=1 (repeatable)")
    shapes.add_argument("--batch", type=positive_int, metavar="N", help="set axis 0 of every input to N")
    shapes.add_argument("--value", action="append", default=[], metavar="NAME=V1,V2,...",
                        help="the value of an input the graph computes with, e.g. sr=16000 (an If on the sample "
                             "rate is then costed on the branch it takes); repeatable")
    shapes.add_argument("--loop-trips", type=positive_int, metavar="N",
                        help="trip count for Loops whose count is not a constant in the model")
    shapes.add_argument("--phase", choices=("prefill", "decode"),
                        help="a KV-cached decoder's phase: prefill (with --seq) or decode (with --context)")
    shapes.add_argument("--seq", type=positive_int, metavar="N", help="prefill: the prompt length")
    shapes.add_argument("--context", type=non_negative_int, metavar="N", help="decode: the tokens attended in the step, the new one included (N - 1 cached)")
    shapes.add_argument("--encoder-seq", type=positive_int, metavar="N",
                        help="with --phase, for a seq2seq decoder (Whisper, T5): the encoder output's length its "
                             "cross-attention reads, when the model leaves it open")
    shapes.add_argument("--partial", action="store_true",
                        help="analyse with input dims left unbound: nothing assumed, and the nodes depending on them "
                             "not counted")
    hardware = parser.add_argument_group("targets and timing")
    hardware.add_argument("--target", action="append", default=[], metavar="NAME|FILE.toml",
                          help="place the model on a hardware target's roofline (repeatable; `onnxroof targets` lists them)")
    hardware.add_argument("--dtype", choices=("fp32", "fp16", "bf16", "fp8", "int8", "int4"),
                          help="re-cost the model as if stored and run in this type (default: as stored)")
    hardware.add_argument("--fusion", metavar="POLICY",
                          help="group nodes into kernels as a runtime does, on every target: none (one kernel per node), "
                               "epilogue, all, or rule sets such as epilogue,elementwise (default: each target's policy)")
    hardware.add_argument("--no-overhead", action="store_true",
                          help="leave out every target's launch cost per kernel and its efficiency figures (every kernel at "
                               "the roofline; with --fusion none: the plain per-node roofline)")
    hardware.add_argument("--no-findings", action="store_true",
                          help="leave out what to change on each target and the memory fit, which analyse the model "
                               "a few times more (a very large model's summary in one analysis)")
    hardware.add_argument("--devices", type=device_count, metavar="N",
                          help="plan the model on up to N devices of each target: tensor and pipeline parallelism over "
                               f"the target's interconnect, memory per device, the fewest devices that fit (1 to "
                               f"{MAX_DEVICES:,}; default: 1)")
    hardware.add_argument("--micro-batches", type=positive_int, metavar="M",
                          help="with --devices: the micro-batches a pipeline keeps in flight (default: 1)")
    hardware.add_argument("--in-place", action="store_true",
                          help="let single-consumer elementwise ops overwrite their input (memory analysis)")
    other = parser.add_argument_group("rules and diagnostics")
    other.add_argument("--plugin", action="append", default=[], metavar="FILE.py",
                       help="a Python file that registers cost rules with onnxroof.register (repeatable); it is run "
                            "as Python with your rights: pass only files you trust")
    other.add_argument("--strict", action="store_true",
                       help="exit 2 if the analysis is incomplete (unsupported ops, unknown shapes)")
    other.add_argument("-q", "--quiet", action="store_true", help="no progress or warnings on stderr")
    other.add_argument("--debug", action="store_true", help="show tracebacks")


# each analysis option (an AnalysisOptions field, as an OptionError names it) -> the flag that sets it
FLAGS = {"input_shapes": "--input-shape", "dims": "--dim", "values": "--value", "loop_trips": "--loop-trips",
         "elementwise_in_place": "--in-place", "targets": "--target", "dtype": "--dtype", "batch": "--batch",
         "phase": "--phase", "seq": "--seq", "context": "--context", "encoder_seq": "--encoder-seq", "fusion": "--fusion",
         "overhead": "--no-overhead", "partial": "--partial", "devices": "--devices",
         "micro_batches": "--micro-batches"}


def options_from_flags(args: argparse.Namespace) -> AnalysisOptions:
    """The analysis options the flags give (those of :func:`analysis_options`)."""
    return AnalysisOptions(
        input_shapes=args.input_shape, dims=args.dim, values=args.value, loop_trips=args.loop_trips,
        elementwise_in_place=args.in_place, targets=args.target, dtype=args.dtype or "model", batch=args.batch,
        fusion=args.fusion, overhead=not args.no_overhead, phase=args.phase, seq=args.seq, context=args.context,
        encoder_seq=args.encoder_seq, checker_in_child=args.program, partial=args.partial,
        devices=getattr(args, "devices", None) or 1, micro_batches=getattr(args, "micro_batches", None) or 1,
        # one set of flags for several models: a dim one of them lacks is not an error for it
        ignore_missing_dims=hasattr(args, "models") or hasattr(args, "base"))


# what decides the counts a formula is fitted to
_COUNTING_OPTIONS = ("input_shapes", "values", "loop_trips", "dtype", "phase", "elementwise_in_place")
_BINDING_OPTIONS = ("dims", "batch", "seq", "context", "encoder_seq")  # values for dims: a formula leaves them free unless bound
_TIMING_OPTIONS = ("targets", "fusion", "overhead")  # (not devices: a formula is one device's)  # what decides the latency formulas


def formula_options(args: argparse.Namespace, bound: bool = True) -> AnalysisOptions:
    """The options of the analyses a formula is fitted to: the flags that change the counts, with
    the dims the flags bind (``bound``) or without (the report's formulas are in every dim the
    model leaves free, whatever values its numbers take), and the targets for their latency
    formulas; every other option at its default."""
    given = options_from_flags(args)
    kept = _COUNTING_OPTIONS + (_BINDING_OPTIONS if bound else ()) + (_TIMING_OPTIONS if given.targets else ())
    return replace(AnalysisOptions(), **{name: getattr(given, name) for name in kept})


def single_model(parser: argparse.ArgumentParser, budgets: bool = True) -> None:
    parser.add_argument("model", nargs="?", help="path to the .onnx file (or example:NAME)")
    parser.add_argument("--example", metavar="NAME", help="use a built-in example model ('--example list' names them)")
    analysis_options(parser)
    parser.add_argument("--sweep", action="append", default=[], metavar="SYMBOL=V1,V2,...",
                        help="analyse at every value (a dim name, or batch, dtype, seq, context, encoder_seq); repeatable: "
                             "the product of the values")
    parser.add_argument("--emit-order", metavar="FILE",
                        help="write the lowest-peak execution order found, one node name per line (a backslash "
                             "and control characters in a name written as Python escapes: \\\\, \\x0a)")
    parser.add_argument("-o", "--output", metavar="FILE", help="write the output to FILE (whole or not at all; - is standard output)")
    if budgets:
        budget_option(parser, relative=False)


def budget_option(parser: argparse.ArgumentParser, relative: bool) -> None:
    example = "'flops>+5%%', 'latency[myriad-x]>+2%%', " if relative else ""
    parser.add_argument("--fail-if", action="append", default=[], metavar="BUDGET",
                        help=f"exit 1 if a budget is broken, e.g. {example}'params>5M', 'peak_memory>2MiB' (repeatable)")


def non_negative_int(text: str) -> int:
    if not text.isdigit():
        raise argparse.ArgumentTypeError(f"expected a non-negative integer, got {text!r}")
    return int(text)


def positive_int(text: str) -> int:
    if not text.isdigit() or int(text) <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return int(text)


def device_count(text: str) -> int:
    """``--devices``: a whole number of 1 or more; its upper end (:data:`MAX_DEVICES`) is the
    analysis options' check, in the same words."""
    if not text.isdigit() or int(text) <= 0:
        raise argparse.ArgumentTypeError(f"give a whole number from 1 to {MAX_DEVICES:,}, got {text!r}")
    return int(text)


def positive_seconds(text: str) -> float:
    try:
        value = float(text.strip().removesuffix("s"))
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"expected a positive number of seconds, got {text!r}")
    return value


EXAMPLES = {
    "summary": """examples:
  onnxroof summary model.onnx --target l4 --target jetson-orin-nano
  onnxroof summary encoder.onnx --dim sequence=128 --format markdown
  onnxroof summary gpt2.onnx --phase decode --context 2048 --target h100-sxm
  onnxroof summary model.onnx --sweep batch=1,8,64 --target l4 --fail-if 'params>5M'""",
    "report": """examples:
  onnxroof report model.onnx --target h100-sxm -o report.html
  onnxroof report --example minigooglenet --target myriad-x
  onnxroof report model.onnx --sweep batch=1,8,64 --target l4 -o sweep.html""",
    "graph": """examples:
  onnxroof graph model.onnx --target l4 -o model.svg
  onnxroof graph --example minigooglenet --target myriad-x
  onnxroof graph encoder.onnx --target h100-sxm --depth 3
  onnxroof graph encoder.onnx --target h100-sxm --module encoder/layer.0 -o layer.svg""",
    "explain": """examples:
  onnxroof explain model.onnx /layer1/conv1/Conv --target l4
  onnxroof explain --example shallownet conv2d_0""",
    "diff": """examples:
  onnxroof diff base.onnx head.onnx --target l4 --format markdown
  onnxroof diff base.onnx head.onnx --fail-if 'flops>+5%' --fail-if 'latency[l4]>+2%'
  onnxroof diff base.onnx head.onnx --format html       # writes base-vs-head.diff.html""",
    "check": """examples:
  onnxroof check models/*.onnx --fail-if 'params>50M' --fail-if 'peak_memory>256MiB'
  onnxroof check detector.onnx --target jetson-orin-nano --fail-if 'latency[jetson-orin-nano]<5ms'
  onnxroof check model-store/ --jobs 8 --timeout 300 --format jsonl -o audit.jsonl""",
    "compare": """examples:
  onnxroof compare a.onnx b.onnx c.onnx --target jetson-orin-nano
  onnxroof compare a.onnx b.onnx --dim sequence=128 --format html -o compare.html""",
}
