"""Each target: its file (``targets``), the kernels a runtime runs under its fusion policy
(``kernels``), and where each kernel sits on its roofs, its time and energy (``placement``).
"""
