"""docs/ops.md: every cost rule in the registry with its formula (generated, never edited).

onnxroof ops > docs/ops.md
"""

from __future__ import annotations

from collections import defaultdict

from ...ops import COST_RULES, OpRule

HEADER = """# Cost rules

Generated from onnxroof's rule registry by `onnxroof ops > docs/ops.md`; a test keeps it in sync.
Each rule's formula is its docstring in `onnxroof/ops/<family>.py`. Conventions: MAC-FLOPs = 2 x MACs
(bias folded in); every other element operation counts once (a transcendental too); data movement
costs 0 FLOPs but moves bytes; a view moves nothing. "Argument inputs" are input slots holding shapes
or settings: constants there are not parameters. An op without a rule is reported as unsupported.
A rule for an op ONNX has no schema for (contrib ops) also states its outputs ("Outputs:"), which is
what shape inference uses for them.
"""


def render_ops_markdown(rules: dict[tuple[str, str], OpRule] | None = None) -> str:
    rules = COST_RULES if rules is None else rules
    by_family: dict[str, list[tuple[str, str, OpRule]]] = defaultdict(list)
    for (domain, op_type), rule in rules.items():
        by_family[rule.family].append((domain or "ai.onnx", op_type, rule))
    lines = [HEADER, f"{len(rules)} rules in {len(by_family)} families.", ""]
    for family in sorted(by_family):
        lines += [f"## {family}", "", "| domain | op | rule | argument inputs |", "|---|---|---|---|"]
        for domain, op_type, rule in sorted(by_family[family]):
            arguments = ", ".join(str(i) for i in sorted(rule.arg_inputs)) or "-"
            formula = rule.formula + (f" **Outputs:** {rule.shape_formula}" if rule.shape_formula else "")
            formula = formula.replace("|", "\\|")
            lines.append(f"| {domain} | {op_type} | {formula} | {arguments} |")
        lines.append("")
    return "\n".join(lines)
