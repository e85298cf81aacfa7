"""``onnxroof export``: the analysis as an overlay for the viewers people already use: a Netron
attachment (report/netron.py) or Model Explorer node data (report/model_explorer.py)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ...core.errors import EXIT_OK, UsageError
from ...core.files import write_outputs
from ..analysing import Analysing, analyze_one, on_one_model
from ..options import EXAMPLES, analysis_options, model_arguments
from ..output import model_inputs, safe_stem

HELP = "write the figures as a Netron or Model Explorer overlay"
EPILOG = EXAMPLES["export"]
VIEWERS = ("netron", "model-explorer")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The command's flags."""
    model_arguments(parser)
    parser.add_argument(
        "--to",
        required=True,
        choices=VIEWERS,
        help="netron: one attachment (figures per node, per target, and the verdict); model-explorer: "
        "node data, one file per target and metric (share of the latency, bound)",
    )
    analysis_options(parser)
    parser.add_argument(
        "-o",
        "--output",
        metavar="PATH",
        help="netron: the file (default: MODEL.onnxroof.json beside the model); model-explorer: an "
        "existing folder for the files MODEL.TARGET.METRIC.json (default: beside the model)",
    )
    parser.set_defaults(sweep=[], emit_order=None)


def run(args: argparse.Namespace) -> int:
    return on_one_model(args, lambda source, budgets: _export(source, args))


def _export(source: str, args: argparse.Namespace) -> int:
    analysis = analyze_one(source, Analysing.from_flags(args, several_models=False))
    if args.to == "netron":
        outputs = _netron_outputs(analysis, args.output, findings=not args.no_findings)
    else:
        outputs = _model_explorer_outputs(analysis, args.output)
    write_outputs(outputs, model_inputs(args))  # whole files, all or none
    if not args.quiet:
        for _, path, _ in outputs:
            print(f"onnxroof: wrote {path}", file=sys.stderr)
    return EXIT_OK


def _netron_outputs(analysis, output: str | None, findings: bool) -> list[tuple[str, str, str]]:
    from ...api import review
    from ...report.netron import render_netron

    return [
        (
            "-o",
            output or str(_beside_model(analysis, "onnxroof.json")),
            render_netron(analysis, review(analysis) if findings else None),
        )
    ]


def _model_explorer_outputs(analysis, folder: str | None) -> list[tuple[str, str, str]]:
    from ...report.model_explorer import node_data_files, render_node_data

    if not analysis.targets:
        raise UsageError("--to model-explorer colours the nodes by their time on a target: give one (--target NAME)")
    if folder is not None and not Path(folder).is_dir():
        raise UsageError(
            f"-o {folder}: is not a folder; with --to model-explorer -o names the folder for the files "
            "(create it first)"
        )
    outputs = []
    for (target, metric), data in node_data_files(analysis).items():
        name = f"{safe_stem(target)}.{metric}.json"
        path = Path(folder) / f"{_model_stem(analysis)}.{name}" if folder is not None else _beside_model(analysis, name)
        outputs.append(("-o", str(path), render_node_data(data)))
    return outputs


def _model_stem(analysis) -> str:
    return Path(analysis.model.path).stem if analysis.model.path else safe_stem(analysis.model.name)


def _beside_model(analysis, suffix: str) -> Path:
    """MODEL.SUFFIX in the model's folder (the current one for an example)."""
    folder = Path(analysis.model.path).parent if analysis.model.path else Path(".")
    return folder / f"{_model_stem(analysis)}.{suffix}"
