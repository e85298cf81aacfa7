"""Model-supplied text (names, dims, op types, producer) made safe for where it is written: a
terminal (:func:`printable`) or a spreadsheet (:func:`csv_cell`). A model is untrusted input: its
strings may hold ANSI escapes, BEL, newlines that forge a line, or spreadsheet formulas."""

from __future__ import annotations

import re


def printable(text: object) -> str:
    """Model-supplied text for a terminal: one line, and control characters (newlines, ANSI
    escapes, BEL) shown as '?', never interpreted.

    >>> printable("a\\x1b[2Jb\\nc")
    'a?[2Jb?c'
    """
    text = str(text)
    return text if text.isprintable() else "".join(c if c.isprintable() else "?" for c in text)


def page_text(text: str) -> str:
    r"""Text for a web page (HTML, SVG): as :func:`printable`, but a newline or tab stays (a
    tooltip's lines); the characters XML forbids (NUL, ESC ...), U+2028 and lone surrogates are '?'.

    >>> page_text("a\x00b\x1b[2J\u2028c\nd\te\ud800")
    'a?b?[2J?c\nd\te?'
    """
    if text.isprintable() or text.replace("\n", "").replace("\t", "").isprintable():  # C speed: a tooltip's lines
        return text
    return "".join(c if c.isprintable() or c in "\n\t" else "?" for c in text)


def one_line(text: object) -> str:
    r"""Text from a model or a user (names, paths, flag values) as one printable line: control
    characters (newlines, ANSI escapes) are shown escaped, never interpreted by the terminal.

    >>> print(one_line("a\x1b[2Jb\nc"))
    a\x1b[2Jb\nc
    """
    text = str(text)
    return text if text.isprintable() else "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")  # what a spreadsheet program reads as a formula (OWASP)


def csv_cell(text: object) -> str:
    """A text cell of a CSV file: printable (see :func:`printable`), and prefixed with ``'`` when
    it starts as a formula would (``= + - @``, tab, carriage return), so that a spreadsheet program
    shows it as text instead of running it (the OWASP rule for CSV injection).

    >>> csv_cell("=HYPERLINK(\\"http://x\\")"), csv_cell("conv1"), csv_cell("-1")
    ('\\'=HYPERLINK("http://x")', 'conv1', "'-1")
    """
    text = str(text)
    quoted = "'" + text if text.startswith(FORMULA_STARTS) else text
    return printable(quoted)


def escaped(text: object) -> str:
    r"""Model-supplied text on one line of a file that is read back (``--emit-order``): each
    backslash doubled and each control character (newlines, ANSI escapes, BEL) as a Python escape
    (``\x1b``, ``\u2028``), so nothing is interpreted and :func:`unescaped` gives the text back
    exactly (:func:`printable`'s ``?`` would lose it). A real node name has neither, and is as it was.

    >>> print(escaped("a\x1b[2J\\b\nc"))
    a\x1b[2J\\b\x0ac
    >>> unescaped(escaped("a\x1b[2J\\b\nc\u2028")) == "a\x1b[2J\\b\nc\u2028"
    True
    """
    text = str(text)
    if text.isprintable() and "\\" not in text:
        return text
    return "".join(_escape(c) for c in text)


def _escape(char: str) -> str:
    if char == "\\":
        return "\\\\"
    if char.isprintable():
        return char
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


_ESCAPE = re.compile(r"\\(\\|x[0-9a-f]{2}|u[0-9a-f]{4}|U[0-9a-f]{8})")


def unescaped(text: str) -> str:
    """The text :func:`escaped` was given (a line of an ``--emit-order`` file, its newline removed)."""
    return _ESCAPE.sub(lambda m: "\\" if m[1] == "\\" else chr(int(m[1][1:], 16)), text)


def model_label(name: str, graph_name: str) -> str:
    """The model's name, with the graph's name beside it when that says more than an exporter's
    default.

    >>> model_label("resnet18", "main_graph"), model_label("enc", "encoder_v2")
    ('resnet18', 'enc (graph encoder_v2)')
    """
    if graph_name and graph_name != name and graph_name.lower() not in _GENERIC_GRAPH_NAMES:
        return f"{name} (graph {graph_name})"
    return name


# graph names exporters write whatever the model: they say nothing beside a file's name
_GENERIC_GRAPH_NAMES = frozenset(
    {
        "main_graph",
        "torch_jit",
        "torch-jit-export",
        "tf2onnx",
        "graph",
        "model",
        "onnx",
        "mxnet_converted_model",
        "keras2onnx",
        "sklearn",
        "jax2onnx",
    }
)
