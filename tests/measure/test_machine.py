"""Facts about the machine a calibration runs on."""

from __future__ import annotations

from onnxroof.measure.machine import cache_text, core_text, cpu_model, size_text, usable_cpus


def test_machine_facts_are_strings():
    assert cpu_model() and isinstance(cpu_model(), str)
    assert "CPU" in core_text() or "cores" in core_text()
    assert usable_cpus() >= 1
    assert isinstance(cache_text(), str)


def test_sizes_are_written_in_binary_units():
    assert size_text(512) == "512 B"
    assert size_text(32 * 2**10) == "32 KiB"
    assert size_text(3 * 2**19) == "1.5 MiB"
    assert size_text(2**30) == "1 GiB"
