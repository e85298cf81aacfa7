"""The base every stage stands on, with no pipeline knowledge: the error types and exit codes,
element types, units and their formatting, the records of a tensor and of a node, atomic file
writing, where bundled files live, the built-in example models and the version.
"""
