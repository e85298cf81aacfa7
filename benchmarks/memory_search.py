"""Time the schedule search on 1,000-node graphs of three shapes and print a Markdown table.

    python benchmarks/memory_search.py

Shapes: a chain (one order), stacked two-branch modules (Inception-like: the exact search must
choose which branch runs first in every module) and stacked four-branch modules (wider).
"""

from __future__ import annotations

import platform
import time

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

import onnxroof
from onnxroof.memory.problem import build_problem, schedule_peak
from onnxroof.memory.schedule import best_order


def branchy_model(modules: int, branches: int, depth: int = 2, width: int = 64, interleave: bool = False) -> onnx.ModelProto:
    """``modules`` blocks; each fans x out into ``branches`` chains of ``depth`` ops, then Concat
    and a MatMul back to ``width``. Branch widths differ so that the order matters. With
    ``interleave`` the model lists the branches' first ops together (a poor order to improve on)."""
    nodes, inits = [], []
    x = "x"
    for m in range(modules):
        ends = []
        for b in range(branches):
            t = x
            grow = width * (b + 1)
            w = f"w{m}_{b}"
            inits.append(numpy_helper.from_array(np.zeros((width, grow), np.float32), w))
            nodes.append(helper.make_node("MatMul", [t, w], [f"m{m}_{b}"], name=f"m{m}_{b}"))
            t = f"m{m}_{b}"
            for d in range(depth - 1):
                nodes.append(helper.make_node("Relu", [t], [f"r{m}_{b}_{d}"], name=f"r{m}_{b}_{d}"))
                t = f"r{m}_{b}_{d}"
            ends.append(t)
        if interleave:
            module = nodes[len(nodes) - branches * depth:]
            nodes[len(nodes) - branches * depth:] = sorted(module, key=lambda n: (n.op_type != "MatMul", n.name))
        nodes.append(helper.make_node("Concat", ends, [f"c{m}"], name=f"c{m}", axis=1))
        total = sum(width * (b + 1) for b in range(branches))
        inits.append(numpy_helper.from_array(np.zeros((total, width), np.float32), f"p{m}"))
        nodes.append(helper.make_node("MatMul", [f"c{m}", f"p{m}"], [f"x{m}"], name=f"p{m}"))
        x = f"x{m}"
    graph = helper.make_graph(nodes, "branchy", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, width])],
                              [helper.make_tensor_value_info(x, TensorProto.FLOAT, [1, width])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def measure(name: str, model: onnx.ModelProto) -> str:
    analysis = onnxroof.analyze(model)
    problem = build_problem(analysis.cost_graph)
    start = time.perf_counter()
    result = best_order(problem)
    seconds = time.perf_counter() - start
    model_peak = schedule_peak(problem, problem.model_order).peak_bytes
    return (f"| {name} | {len(problem.model_order):,} | {model_peak:,} | {result.schedule.peak_bytes:,} | "
            f"{result.method} | {result.states:,} | {seconds:.2f} |")


if __name__ == "__main__":
    print(f"machine: {platform.processor() or platform.machine()}, Python {platform.python_version()}\n")
    print("| graph | nodes | model-order peak B | best peak B | method | states | search s |")
    print("|---|---:|---:|---:|---|---:|---:|")
    from chain import chain_model  # benchmarks/chain.py

    print(measure("chain", chain_model(1002)))
    print(measure("2-branch modules", branchy_model(modules=166, branches=2)))
    print(measure("4-branch modules", branchy_model(modules=90, branches=4, depth=2)))
    print(measure("2-branch modules, interleaved", branchy_model(modules=166, branches=2, interleave=True)))
    print(measure("4-branch depth-3 modules, interleaved", branchy_model(modules=62, branches=4, depth=3, interleave=True)))
    print(measure("2-branch modules (10 k nodes)", branchy_model(modules=1666, branches=2)))
