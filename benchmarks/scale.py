"""onnxroof end to end against bare onnx.load + shape inference, on generated graphs of growing size
and on a GPT-2-style 48-layer decoder exported by torch (random weights, saved as external data);
and a chain of Relu under a target whose policy fuses elementwise ops (one kernel of the whole
chain) against the same run with ``--fusion none`` and against bare onnx.

    python benchmarks/scale.py [--sizes 1000,10000,30000,100000] [--runs 3] [--gpt2-layers 48]
                               [--fusion-sizes 10000,30000,100000] [--fusion-target l4] [--fusion-findings 1]
                               [--fanin-sizes 2000,10000] [--cache DIR] [--write docs/performance.md]

``--sizes ''`` with ``--gpt2-layers 0`` runs the fusion table alone. Its fused and none runs are
``summary --target T --format json --no-findings`` (one analysis, placed on the target); the
same command with its findings (the default) has columns of their own, and the largest size's
ratios to bare onnx and to ``--no-findings`` are printed below the table (``--fusion-findings 0``
leaves them out). ``--fanin-sizes`` times one ``Sum`` of that many ``Relu`` branches the same way. Bare onnx and the runs alternate, so
a busy machine slows them alike; the CPU column (user + system seconds of the children) drifts
less than the wall clock on a shared machine.

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
    seconds, rss, _ = timed_cpu(command)
    return seconds, rss


def timed_cpu(command: list[str]) -> tuple[float, float, float]:
    """(wall seconds, peak RSS MiB, CPU seconds: user + system) of one fresh process (wait4)."""
    start = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(process.pid, 0)
    seconds = time.perf_counter() - start
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode != 0:
        raise subprocess.CalledProcessError(process.returncode, command)
    return seconds, usage.ru_maxrss / 1024, usage.ru_utime + usage.ru_stime


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


def measure_fusion(path: Path, runs: int, target: str, findings: bool, with_none: bool = True) -> dict:
    """Bare onnx, then ``summary --target T --format json --no-findings`` as the target's policy
    fuses, the same with ``--fusion none`` (every node its own kernel; unless not ``with_none``)
    and, with ``findings``, the fused run with its findings (the command's default), alternating."""
    summary = [sys.executable, "-m", "onnxroof.cli", "summary", str(path), "--target", target, "--format", "json",
               "-q", "-o", os.devnull]
    commands = {"bare": [sys.executable, "-c", BARE, str(path)], "fused": [*summary, "--no-findings"]}
    if with_none:
        commands["none"] = [*summary, "--no-findings", "--fusion", "none"]
    if findings:
        commands["findings"] = summary
    times: dict[str, list[tuple[float, float, float]]] = {name: [] for name in commands}
    for _ in range(runs):
        for name, command in commands.items():
            times[name].append(timed_cpu(command))
    result = {f"{name}_s": statistics.median(s for s, _, _ in found) for name, found in times.items()}
    result |= {f"{name}_cpu": statistics.median(c for _, _, c in found) for name, found in times.items()}
    result |= {f"{name}_rss": max(r for _, r, _ in found) for name, found in times.items()}
    return result


def fusion_row(nodes: int, result: dict) -> str:
    findings = (f"{result['findings_s']:.2f} | {result['findings_s'] / result['bare_s']:.2f}x | "
                f"{result['findings_s'] / result['fused_s']:.2f}x | {result['findings_cpu'] / result['bare_cpu']:.2f}x"
                if "findings_s" in result else "- | - | - | -")
    return (f"| {nodes:,} | {result['bare_s']:.2f} | {result['fused_s']:.2f} | {result['none_s']:.2f} | "
            f"{result['fused_s'] / result['bare_s']:.2f}x | {result['fused_s'] / result['none_s']:.2f}x | "
            f"{result['fused_cpu'] / result['bare_cpu']:.2f}x | {findings} | "
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


def fan_in_file(size: int, directory: Path) -> Path:
    path = directory / f"fan_in_{size}.onnx"
    in_child(f"import onnx; from chain import fan_in_model; onnx.save(fan_in_model({size}), {str(path)!r})")
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
    parser.add_argument("--fusion-findings", type=int, default=1,
                        help="1: also time the fused run with its findings (the default command); 0: leave it out")
    parser.add_argument("--fanin-sizes", default="",
                        help="branch counts of a Sum of Relus timed with and without its findings ('': none)")
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
                f"Relu chain on a 1x16 tensor, `summary --target {args.fusion_target} --format json --no-findings` "
                "(the target's policy fuses the chain into one kernel) against the same with `--fusion none` and "
                "bare onnx; then the same fused run with its findings (the default):",
                "",
                "| nodes | bare load + infer s | fused s | --fusion none s | fused / bare | fused / none "
                "| fused / bare, CPU | with findings s | with findings / bare | with findings / fused "
                "| with findings / bare, CPU | fused peak RSS | none peak RSS |",
                "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
            ]
        largest = None
        for size in fusion_sizes:
            path = relu_chain_file(size, Path(directory))
            result = measure_fusion(path, args.runs, args.fusion_target, bool(args.fusion_findings))
            lines.append(fusion_row(node_count(path), result))
            print(lines[-1], flush=True)
            largest = (node_count(path), result)
        if largest is not None and "findings_s" in largest[1]:
            nodes, result = largest
            lines += ["", f"The default command with its findings, `summary --target {args.fusion_target}`, at {nodes:,} "
                      f"nodes: **{result['findings_s'] / result['bare_s']:.2f}x** bare onnx (CPU "
                      f"{result['findings_cpu'] / result['bare_cpu']:.2f}x; the acceptance: within 3x) and "
                      f"**{result['findings_s'] / result['fused_s']:.2f}x** the same command with `--no-findings` "
                      f"(CPU {result['findings_cpu'] / result['fused_cpu']:.2f}x; within 1.5x)."]
            print(lines[-1], flush=True)
        fanin_sizes = [int(s) for s in args.fanin_sizes.split(",") if s]
        if fanin_sizes:
            lines += [
                "",
                f"One `Sum` of N `Relu` branches on a 1x16 tensor, `summary --target {args.fusion_target} --format json`"
                " without its findings (`--no-findings`) and with them (the default):",
                "",
                "| nodes | bare load + infer s | no findings s | with findings s | with findings / no findings "
                "| the same, CPU | no findings / bare | with findings / bare |",
                "|---:|---:|---:|---:|---:|---:|---:|---:|",
            ]
        for size in fanin_sizes:
            path = fan_in_file(size, Path(directory))
            result = measure_fusion(path, args.runs, args.fusion_target, True, with_none=False)
            lines.append(f"| {node_count(path):,} | {result['bare_s']:.2f} | {result['fused_s']:.2f} | "
                         f"{result['findings_s']:.2f} | {result['findings_s'] / result['fused_s']:.2f}x | "
                         f"{result['findings_cpu'] / result['fused_cpu']:.2f}x | {result['fused_s'] / result['bare_s']:.2f}x | "
                         f"{result['findings_s'] / result['bare_s']:.2f}x |")
            print(lines[-1], flush=True)
    text = "\n".join(lines) + "\n"
    if args.write:
        Path(args.write).write_text(text)
    print(text)


if __name__ == "__main__":
    main()
