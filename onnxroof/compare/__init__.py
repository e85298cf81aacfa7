"""Several analyses at once: two models' differences (``diff``), one model over several values
(``sweep``), budgets over the totals (``budgets``), and the module tree of the node names
(``modules``).
"""
