"""Cost rules for the plugin kernels of NVIDIA's MLPerf harness, which the published rows time and
no exporter writes. Registered with ``onnxroof.register`` on import, as a user's plugin would be.

``RnRes2FullFusion_TRT`` (domain ``mlperf.nvidia``, built by ``models._res2_full_fusion``) is
ResNet-50's first stage, three bottlenecks at one resolution, run as one CUDA kernel: its
activations between the stage's 22 layers never leave the chip, so the kernel reads the stage's
input and its weights and writes the stage's output only.
"""

from __future__ import annotations

from math import prod

from onnxroof import register
from onnxroof.ops import OpCost

from .models import NV


def _weights(node) -> list[tuple[int, ...]]:
    """The 4-D inputs after the first: the stage's convolution weights [Co, Ci, kh, kw]."""
    return [tuple(node.input_shape(i)) for i in range(1, len(node.inputs)) if len(node.input_shape(i)) == 4]


def res2_full_fusion(node) -> OpCost:
    """MACs = N x H x W x sum(Co x Ci x kh x kw) over the weights: every convolution of the stage
    keeps the input's H x W (stride 1, 'same' padding). FLOPs (the epilogues) = N x H x W x 10 x
    width per bottleneck: the ReLUs after its first two convolutions (width each), the residual Add
    and its ReLU (4 x width each); width = the first bottleneck's first Co; bottlenecks = the
    weights after the downsample, three each."""
    batch, _, height, width_px = node.input_shape(0)
    weights = _weights(node)
    per_pixel_macs = sum(prod(w) for w in weights)
    width, bottlenecks = weights[1][0], (len(weights) - 1) // 3
    pixels = batch * height * width_px
    macs, flops = pixels * per_pixel_macs, pixels * 10 * width * bottlenecks
    return OpCost(macs=macs, flops=flops,
                  formula=f"{pixels:,} pixels x {per_pixel_macs:,} MACs = {macs:,} MACs; "
                          f"{bottlenecks} bottlenecks' epilogues {flops:,} FLOPs")


def res2_full_fusion_shapes(node):
    """Y: [N, the last weight's Co, H, W], the input's type (the stage keeps the resolution)."""
    batch, _, height, width_px = node.input_shape(0)
    return [(node.inputs[0].dtype, (batch, _weights(node)[-1][0], height, width_px))]


register("RnRes2FullFusion_TRT", res2_full_fusion, family="conv", domain=NV, shapes=res2_full_fusion_shapes)
