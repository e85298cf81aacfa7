"""Live activations: the buffers of a cost DAG and their lifetimes (``problem``), the execution
order that lowers the peak (``schedule``), which buffers leave on-chip memory when it is full
(``spill``), and the report the pipeline keeps (``liveness``).
"""
