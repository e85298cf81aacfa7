"""A small model and a target the report's tests share, each figure worked out by hand.

x [1, 4] -> MatMul with a stored W [4, 8] -> y [1, 8] -> Relu -> z [1, 8], all float32:
- MatMul: 1 x 4 x 8 = 32 MACs, 64 MAC-FLOPs; W is 32 parameters, 128 bytes;
- Relu: 8 FLOPs (one per element); the model: 72 FLOPs;
- live bytes (graph inputs live from step 0, a tensor until its last reader): step 0 (matmul)
  x 16 + y 32 = 48; step 1 (relu) y 32 + z 32 = 64, the peak; the largest layer, relu, is 64 too;
- on the target below (1 GFLOP/s fp32, 1 GB/s DRAM, nothing on chip, no launch cost, one kernel
  per node), every byte goes through DRAM: the MatMul moves 128 + 16 + 32 = 176 bytes (176 ns,
  against 64 ns of compute: DRAM-bound), the Relu 32 + 32 = 64 bytes (64 ns, against 8 ns): the
  latency is 240 ns.
"""

from __future__ import annotations

import numpy as np
from conftest import make_model, target_text
from onnx import TensorProto, helper

MACS, MAC_FLOPS, FLOPS, PARAMS, PARAM_BYTES = 32, 64, 72, 32, 128
PEAK_BYTES, PEAK_STEP = 64, 1
MATMUL_S, RELU_S = 176e-9, 64e-9
LATENCY_S = MATMUL_S + RELU_S


def matmul_relu(name: str = "matmul_relu", columns: int = 8, batch: int | str = 1):
    """The model above; with another number of ``columns`` n: 4n MACs, 8n + n FLOPs, 4n parameters;
    a ``batch`` b multiplies the MACs, FLOPs and activations by b (a name leaves it open)."""
    return make_model(
        [
            helper.make_node("MatMul", ["x", "W"], ["y"], name="matmul"),
            helper.make_node("Relu", ["y"], ["z"], name="relu"),
        ],
        [("x", TensorProto.FLOAT, [batch, 4])],
        [("z", TensorProto.FLOAT, [batch, columns])],
        [("W", np.ones((4, columns), np.float32))],
        name=name,
    )


def hand_target(directory, name: str = "hand") -> str:
    """1 GFLOP/s fp32, 1 GB/s DRAM, nothing on chip, no launch cost, one kernel per node."""
    path = directory / f"{name}.toml"
    path.write_text(
        target_text(
            {"peak_ops_per_s.fp32": 1e9, "dram.bandwidth_bytes_per_s": 1e9},
            '[fusion]\nrules = []\nsource = "hand"\n',
            name=name,
        )
    )
    return str(path)


def hand_profile(directory):
    """A profile made by hand (no onnxruntime) of :func:`matmul_relu` on :func:`hand_target`: the
    MatMul measured at 352 ns (2 x 176 ns), the Relu at its 64 ns, and a copy onnxruntime inserted
    (16 ns, no ONNX node): 432 ns measured against 240 ns predicted."""
    import onnxroof
    from onnxroof.measure.profiling import Coverage, KernelTime, NodeComparison, ProfileMapping, ProfileResult

    analysis = onnxroof.analyze(matmul_relu(), targets=[hand_target(directory)])
    kernels = [
        KernelTime("matmul", "MatMul", 2 * MATMUL_S, ["matmul"]),
        KernelTime("relu", "Relu", RELU_S, ["relu"]),
        KernelTime("copy_in", "MemcpyFromHost", 16e-9),
    ]
    mapping = ProfileMapping(
        seconds={"matmul": 2 * MATMUL_S, "relu": RELU_S},
        kernels=kernels,
        kernel_of={"matmul": "matmul", "relu": "relu"},
        removed=[],
        not_seen=[],
        runs=10,
        run_seconds=None,
    )
    nodes = [
        NodeComparison("matmul", "MatMul", "dram", MATMUL_S, 2 * MATMUL_S, "matmul", "MatMul", False, Coverage.OWN),
        NodeComparison("relu", "Relu", "dram", RELU_S, RELU_S, "relu", "Relu", False, Coverage.OWN),
    ]
    return ProfileResult(
        analysis,
        analysis.targets[0],
        mapping,
        nodes,
        optimization="disable",
        threads=1,
        warmup=2,
        ort_version="1.0",
        notes=["a note"],
    )
