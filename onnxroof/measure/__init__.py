"""Measurements on this machine: its roofs (``roof_kernels``, ``roofs``, ``machine``,
``calibration``), what onnxruntime's kernels reach against them (``achieved``), and
onnxruntime's profile of a model mapped back to its nodes (``ort_events``, ``profiling``,
``profile_run``). They return dataclasses; they neither print nor render.
"""
