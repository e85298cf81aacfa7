"""A kernel's and a run's energy: joules by part (compute, on chip, DRAM) from the target's
picojoule figures, and the static power x the latency where the target states it (cost-model.md
section 5)."""

from __future__ import annotations

from collections import Counter

from .targets import Target


def kernel_energy(
    target: Target, flops_by_roof: Counter, dram_bytes: int, onchip_bytes: int
) -> dict[str, float | None]:
    """Joules per part; None where the target has no figure for work this kernel does."""
    onchip_pj = target.onchip_pj_per_byte.value if target.onchip_pj_per_byte else None
    dram_pj = target.dram_pj_per_byte.value if target.dram_pj_per_byte else None
    compute = [joules(flops, target.energy_per_op_pj(roof)) for roof, flops in flops_by_roof.items()]
    return {
        "compute": None if None in compute else sum(compute),  # type: ignore[arg-type]
        "onchip": joules(onchip_bytes, onchip_pj),
        "dram": joules(dram_bytes, dram_pj),
    }


def joules(amount: int, picojoules_each: float | None) -> float | None:
    """``amount`` units at ``picojoules_each``, in joules: none for no work, None without a figure."""
    if not amount:
        return 0.0
    return None if picojoules_each is None else amount * picojoules_each * 1e-12


def run_energy(
    target: Target, kernel_energies: list[dict[str, float | None]], latency: float, notes: list[str]
) -> tuple[float | None, dict[str, float | None]]:
    """(joules of one run or None, joules by part): the kernels' parts summed (None where one has no
    figure, said in a note), and the static power x the latency where the target states it."""
    split: dict[str, float | None] = {}
    for part in ("compute", "onchip", "dram"):
        values = [energy[part] for energy in kernel_energies]
        split[part] = None if any(v is None for v in values) else sum(values)  # type: ignore[arg-type]
    missing = [part for part, value in split.items() if value is None]
    if missing:
        notes.append(f"no energy figures for {', '.join(missing)} on this target: energy left out")
    energy = None if missing else sum(v for v in split.values() if v is not None)
    if target.static_power_w is not None:  # drawn however busy the device is, for as long as the run takes
        static_j = split["static"] = target.static_power_w.value * latency
        energy = None if energy is None else energy + static_j
    return energy, split
