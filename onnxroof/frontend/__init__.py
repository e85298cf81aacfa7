"""The model as the stages need it: read and refused in one line when broken (``load``,
``checks``), its inputs bound (``inputs``), its shapes inferred (``shapes``) with the small shape
computations ONNX leaves unknown evaluated (``evaluator``), and the tensors that are settings
rather than data found (``shape_arithmetic``).
"""
