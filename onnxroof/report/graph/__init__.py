"""The graph view: the model drawn as a layered DAG folded by its module tree (fold, layout, svg)."""
