"""Costs as exact formulas of the dims a model leaves free: analyses on a grid of values, fitted
as polynomials (``polynomials``, ``formulas``), and each target's latency as a piecewise formula
with the ranges where it holds (``latency_formulas``, ``latency_ranges``).
"""
