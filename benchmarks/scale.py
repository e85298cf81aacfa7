"""onnxroof end to end against bare onnx.load + shape inference, on generated graphs of growing size
and on a GPT-2-style 48-layer decoder exported by torch (random weights, saved as external data);
and a chain of Relu under a target whose policy fuses elementwise ops (one kernel of the whole
chain) against the same run with ``--fusion none`` and against bare onnx.

    python benchmarks/scale.py [--sizes 1000,10000,30000,100000] [--runs 3] [--gpt2-layers 48]
                               [--fusion-sizes 10000,30000,100000] [--fusion-target l4]
                               [--cache DIR] [--write docs/performance.md]

``--sizes ''`` with ``--gpt2-layers 0`` runs the fusion table alone. Its "analysis alone" columns
time ``onnxroof.analyze`` placing on the target in a fresh process, without the findings (which
the command line's JSON makes, analysing the model four times more).

Each figure is the median of ``--runs`` fresh processes (process start included), as a user
running the command sees it. Peak RSS comes from the child's rusage. Nothing here is a test:
tests never time anything.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import onnx


BARE = ("import sys, onnx; m = onnx.load(sys.argv[1]); "
        "onnx.shape_inference.infer_shapes(m, data_prop=True)")


def timed(command: list[str]) -> tuple[float, float]:
    """(wall seconds, peak RSS MiB) of one fresh process; the RSS is that child's own (wait4)."""
    start = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(process.pid, 0)
    seconds = time.perf_counter() - start
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode != 0:
        raise subprocess.CalledProcessError(process.returncode, command)
    return seconds, usage.ru_maxrss / 1024


def measure(path: Path, runs: int, flags: tuple[str, ...] = ()) -> dict:
    bare = [timed([sys.executable, "-c", BARE, str(path)]) for _ in range(runs)]
    summary = [sys.executable, "-m", "onnxroof.cli", "summary", str(path), *flags, "-q", "-o", os.devnull]
    ours = [timed([*summary, "--format", "json"]) for _ in range(runs)]
    table = [timed(summary) for _ in range(runs)]  # the default output: totals and the per-node table
    report = [timed([sys.executable, "-m", "onnxroof.cli", "report", str(path), *flags, "-q", "-o",
                     str(path.with_suffix(".html"))]) for _ in range(max(1, runs // 2))]
    return {
        "bare_s": statistics.median(s for s, _ in bare),
        "summary_s": statistics.median(s for s, _ in ours),
        "table_s": statistics.median(s for s, _ in table),
        "report_s": statistics.median(s for s, _ in report),
        "summary_rss": max(r for _, r in ours),
        "bare_rss": max(r for _, r in bare),
        "report_bytes": path.with_suffix(".html").stat().st_size,
    }


def measure_fusion(path: Path, runs: int, target: str) -> dict:
    """Bare onnx, then ``summary --target T --format json`` as the target's policy fuses, then the
    same with ``--fusion none`` (every node its own kernel), alternating."""
    summary = [sys.executable, "-m", "onnxroof.cli", "summary", str(path), "--target", target, "--format", "json",
               "-q", "-o", os.devnull]
    analysis = [sys.executable, "-c", ANALYSIS, str(path), target]
    bare, fused, none, fused_alone, none_alone = [], [], [], [], []
    for _ in range(runs):
        bare.append(timed([sys.executable, "-c", BARE, str(path)]))
        fused.append(timed(summary))
        none.append(timed([*summary, "--fusion", "none"]))
        fused_alone.append(timed(analysis))
        none_alone.append(timed([*analysis, "none"]))
    return {"bare_s": statistics.median(s for s, _ in bare), "fused_s": statistics.median(s for s, _ in fused),
            "none_s": statistics.median(s for s, _ in none), "fused_rss": max(r for _, r in fused),
            "none_rss": max(r for _, r in none), "fused_alone_s": statistics.median(s for s, _ in fused_alone),
            "none_alone_s": statistics.median(s for s, _ in none_alone)}


# one analysis placed on the target, without the findings (which analyse the model again, docs/performance.md)
ANALYSIS = ("import sys; from onnxroof.pipeline import analyze; "
            "analyze(sys.argv[1], targets=[sys.argv[2]], fusion=sys.argv[3] if len(sys.argv) > 3 else None)")


def fusion_row(nodes: int, result: dict) -> str:
    return (f"| {nodes:,} | {result['bare_s']:.2f} | {result['fused_s']:.2f} | {result['none_s']:.2f} | "
            f"{result['fused_s'] / result['bare_s']:.1f}x | {result['fused_s'] / result['none_s']:.2f}x | "
            f"{result['fused_alone_s']:.2f} | {result['none_alone_s']:.2f} | "
            f"{result['fused_alone_s'] / result['bare_s']:.1f}x | {result['fused_alone_s'] / result['none_alone_s']:.2f}x | "
            f"{result['fused_rss']:.0f} MiB | {result['none_rss']:.0f} MiB |")


def row(label: str, nodes: int, path: Path, result: dict) -> str:
    data = path.with_name(path.name + ".data")  # external weights, when the export keeps them apart
    file_bytes = path.stat().st_size + (data.stat().st_size if data.exists() else 0)
    return (
        f"| {label} | {nodes:,} | {file_bytes / 2**20:.1f} MiB | {result['bare_s']:.2f} | "
        f"{result['summary_s']:.2f} | {result['summary_s'] / result['bare_s']:.1f}x | "
        f"{result['table_s']:.2f} | {result['table_s'] / result['bare_s']:.1f}x | {result['report_s']:.2f} | "
        f"{result['report_bytes'] / 2**20:.1f} MiB | {result['bare_rss']:.0f} MiB | {result['summary_rss']:.0f} MiB | "
        f"{result['summary_s'] / nodes * 1e6:.0f} |"
    )


def gpt2_export(layers: int, directory: Path) -> Path:
    """A GPT-2-small-width decoder with ``layers`` layers and a KV cache, weights as external data
    (as big exports ship). Exported once per cache directory."""
    path = directory / f"gpt2_{layers}l_external.onnx"
    if not path.exists():
        directory.mkdir(parents=True, exist_ok=True)
        in_child(
            "import onnx; from pathlib import Path; from gpt2_phases import export; "
            f"exported = export({layers}, Path({str(directory)!r})); "
            f"onnx.save(onnx.load(exported), {str(path)!r}, save_as_external_data=True, location={path.name + '.data'!r}); "
            "exported.unlink()"
        )
    return path


def chain_file(size: int, directory: Path) -> Path:
    path = directory / f"chain_{size}.onnx"
    in_child(f"import onnx; from chain import chain_model; onnx.save(chain_model({size}), {str(path)!r})")
    return path


def relu_chain_file(size: int, directory: Path) -> Path:
    path = directory / f"relu_chain_{size}.onnx"
    in_child(f"import onnx; from chain import elementwise_chain_model; "
             f"onnx.save(elementwise_chain_model({size}), {str(path)!r})")
    return path


def node_count(path: Path) -> int:
    return len(onnx.load(path, load_external_data=False).graph.node)


def in_child(code: str) -> None:
    """Run ``code`` in a fresh interpreter. Models are built there, not here: a child's peak RSS
    counts its parent's memory at the fork, so this process must stay small."""
    subprocess.run([sys.executable, "-c", code], check=True, cwd=Path(__file__).resolve().parent)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="1000,10000,30000,100000")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--gpt2-layers", type=int, default=48, help="0 leaves the GPT-2 export out")
    parser.add_argument("--fusion-sizes", default="10000,30000,100000",
                        help="lengths of the Relu chain timed under a fusing target ('' leaves it out)")
    parser.add_argument("--fusion-target", default="l4", help="a target whose policy fuses elementwise ops")
    parser.add_argument("--cache", help="directory keeping the GPT-2 export between runs (it takes minutes)")
    parser.add_argument("--write", help="Markdown file to write the table into")
    args = parser.parse_args()
    # compiled once, as `pip install` does: with PYTHONDONTWRITEBYTECODE set (as on the machine of
    # docs/performance.md) an editable checkout would recompile every module on every run
    import onnxroof
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(Path(onnxroof.__file__).parent)], check=True)
    lines = [
        f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
        f"onnx {onnx.__version__}; median of {args.runs} runs, process start included",
        "",
        "| graph | nodes | file | bare load + infer s | summary json s | ratio | summary table s | ratio | report s "
        "| report size | bare peak RSS | summary peak RSS | summary µs per node |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    with tempfile.TemporaryDirectory() as directory:
        for size in (int(s) for s in args.sizes.split(",") if s):
            path = chain_file(size, Path(directory))
            lines.append(row("MatMul/Add/Relu chain", node_count(path), path, measure(path, args.runs)))
            print(lines[-1], flush=True)
        if args.gpt2_layers:
            path = gpt2_export(args.gpt2_layers, Path(args.cache or directory))
            nodes = node_count(path)
            result = measure(path, args.runs, ("--phase", "prefill", "--seq", "512"))
            lines.append(row(f"GPT-2 {args.gpt2_layers}-layer export, prefill 512", nodes, path, result))
            print(lines[-1], flush=True)
        fusion_sizes = [int(s) for s in args.fusion_sizes.split(",") if s]
        if fusion_sizes:
            lines += [
                "",
                f"Relu chain on a 1x16 tensor, `summary --target {args.fusion_target} --format json` (the target's "
                "policy fuses the chain into one kernel) against the same with `--fusion none` and bare onnx:",
                "",
                "| nodes | bare load + infer s | fused s | --fusion none s | fused / bare | fused / none "
                "| analysis alone, fused s | analysis alone, none s | alone fused / bare | alone fused / none "
                "| fused peak RSS | none peak RSS |",
                "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
            ]
        for size in fusion_sizes:
            path = relu_chain_file(size, Path(directory))
            lines.append(fusion_row(node_count(path), measure_fusion(path, args.runs, args.fusion_target)))
            print(lines[-1], flush=True)
    text = "\n".join(lines) + "\n"
    if args.write:
        Path(args.write).write_text(text)
    print(text)


if __name__ == "__main__":
    main()
