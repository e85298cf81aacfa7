"""`onnxroof check` over a generated model store (issue 31, item 9): the wall time with --jobs 1
and --jobs N, and a run with --jobs N whose worker is killed from outside mid-run.

    python benchmarks/check_many.py [--models 300] [--jobs 2] [--no-kill]

The models are MLPs of 20 to 60 MatMul+Relu layers, 64 wide, sharing one weight (17 kB a
file), in a temporary folder. Each timing is one run of the `onnxroof` program, process start included,
on whatever else the machine is doing: a figure to compare the two job counts, not a measure of
the analysis. Nothing here is a test: tests never time anything.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def mlp(depth: int, width: int = 64) -> onnx.ModelProto:
    """``depth`` MatMul+Relu layers sharing one weight: the graph grows, the file hardly does."""
    nodes, previous = [], "x"
    weight = numpy_helper.from_array(np.zeros((width, width), np.float32), "w")
    for layer in range(depth):
        nodes += [helper.make_node("MatMul", [previous, "w"], [f"m{layer}"], name=f"mm{layer}"),
                  helper.make_node("Relu", [f"m{layer}"], [f"r{layer}"], name=f"relu{layer}")]
        previous = f"r{layer}"
    nodes.append(helper.make_node("Identity", [previous], ["y"], name="out"))
    graph = helper.make_graph(nodes, f"mlp{depth}", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, width])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, width])], [weight])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


DEPTHS = (20, 60)  # layers: 41 to 121 nodes, 17 kB a file


def make_store(folder: Path, count: int) -> None:
    for i in range(count):
        onnx.save(mlp(DEPTHS[0] + i % (DEPTHS[1] - DEPTHS[0] + 1)), folder / f"m{i:04}.onnx")


TARGETS = ["--target", "l4", "--target", "raspberry-pi-5"]  # each model placed on two rooflines


def command(folder: Path, jobs: int, output: Path) -> list[str]:
    return [sys.executable, "-m", "onnxroof.cli", "check", str(folder), "--jobs", str(jobs), "--format", "jsonl",
            "-o", str(output), "-q", *TARGETS]


def timed(folder: Path, jobs: int, output: Path) -> float:
    start = time.perf_counter()
    subprocess.run(command(folder, jobs, output), check=True)
    return time.perf_counter() - start


def children(pid: int) -> list[int]:
    found = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        found += [int(c) for c in (task / "children").read_text().split()]
    return found


def killed_run(folder: Path, jobs: int, output: Path, count: int) -> dict:
    """Run check, wait for a fifth of the lines, SIGKILL one worker, and read the result."""
    process = subprocess.Popen(command(folder, jobs, output))
    partial = output.with_name(output.name + ".partial")
    while process.poll() is None:
        lines = partial.read_text().count("\n") if partial.exists() else 0
        if lines >= count // 5:
            workers = children(process.pid)
            victim = workers[0]
            os.kill(victim, signal.SIGKILL)
            break
        time.sleep(0.05)
    else:
        raise SystemExit("the run ended before a worker could be killed: give it more models")
    code = process.wait()
    records = [json.loads(line) for line in output.read_text().splitlines()]
    return {"exit": code, "lines": len(records), "models": len({r["model"] for r in records}),
            "statuses": {s: sum(r["status"] == s for r in records) for s in {r["status"] for r in records}},
            "died": [r["error"] for r in records if r["status"] == "died"], "killed_pid": victim,
            "killed_after_lines": lines}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", type=int, default=300)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--no-kill", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as temporary:
        folder = Path(temporary) / "store"
        folder.mkdir()
        make_store(folder, args.models)
        print(f"{args.models} models, {os.cpu_count()} CPUs; load average before: {os.getloadavg()[0]:.2f}")
        for jobs in (1, args.jobs):
            output = Path(temporary) / f"jobs{jobs}.jsonl"
            seconds = timed(folder, jobs, output)
            lines = output.read_text().splitlines()
            print(f"--jobs {jobs}: {seconds:.1f} s, {len(lines)} lines, "
                  f"{sum(json.loads(line)['status'] == 'ok' for line in lines)} ok")
        if not args.no_kill:
            print("killed worker:", json.dumps(killed_run(folder, args.jobs, Path(temporary) / "killed.jsonl",
                                                          args.models), indent=1))
        print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
