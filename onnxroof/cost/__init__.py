"""The cost DAG: one ``NodeRecord`` per ONNX node from its op rule, linked by the tensors they
exchange (``records``, ``graph``); sizes only the data decides (``splits``); a KV-cached
decoder's cache and phases, found from the graph's structure (``llm``).
"""
