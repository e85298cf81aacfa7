"""A runtime's fixed costs, beside the roofline's: what each kernel's launch costs (warm, or cold
when the run streams past the on-chip memory) and what each run costs before its first kernel
(``run_overhead_s``: binding the inputs, allocating the outputs, the call itself)."""

from __future__ import annotations

from .targets import Target


def kernel_launch_s(target: Target, run_bytes: int, notes: list[str] | None = None) -> float:
    """What each kernel's launch costs: ``cold_node_overhead_s`` when a run touches more bytes
    (``run_bytes``: its parameters and every activation it writes, each once) than the chip
    holds, which evicts the runtime's own state between kernels, else ``node_overhead_s``
    (0 without it). A note in ``notes`` says which.

    >>> from onnxroof.roofline.targets import Figure, Target
    >>> f = lambda v: Figure(v, "measured", "x")
    >>> t = Target("t", "", "", {"fp32": f(1e11)}, f(1e10), onchip_bytes=f(2**21), node_overhead_s=f(0.3e-6),
    ...            cold_node_overhead_s=f(1e-6))
    >>> kernel_launch_s(t, 2**20) * 1e6, kernel_launch_s(t, 2**22) * 1e6
    (0.3, 1.0)
    """
    warm_s = target.node_overhead_s.value if target.node_overhead_s else 0.0
    cold = target.cold_node_overhead_s
    if cold is None or target.onchip_bytes is None or run_bytes <= target.onchip_bytes.value:
        return warm_s
    if notes is not None:
        notes.append(
            f"a run touches {run_bytes:,} B, more than the {int(target.onchip_bytes.value):,} B on chip: each "
            f"kernel's launch costs {cold.value * 1e6:.3g} µs, not {warm_s * 1e6:.3g} µs (the runtime's own "
            "state is evicted between kernels)"
        )
    return cold.value


def run_overhead_s(target: Target) -> float:
    """What one run costs beyond its kernels: the target's ``run_overhead_s``, else 0.

    >>> from onnxroof.roofline.targets import Figure, Target
    >>> f = lambda v: Figure(v, "measured", "x")
    >>> run_overhead_s(Target("t", "", "", {"fp32": f(1e11)}, f(1e10), run_overhead_s=f(4e-6))) * 1e6
    4.0
    """
    return target.run_overhead_s.value if target.run_overhead_s else 0.0
