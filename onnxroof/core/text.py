"""Model-supplied text (names, dims, op types, producer) made safe for where it is written: a
terminal (:func:`printable`) or a spreadsheet (:func:`csv_cell`). A model is untrusted input: its
strings may hold ANSI escapes, BEL, newlines that forge a line, or spreadsheet formulas."""

from __future__ import annotations


def printable(text: object) -> str:
    """Model-supplied text for a terminal: one line, and control characters (newlines, ANSI
    escapes, BEL) shown as '?', never interpreted.

    >>> printable("a\\x1b[2Jb\\nc")
    'a?[2Jb?c'
    """
    text = str(text)
    return text if text.isprintable() else "".join(c if c.isprintable() else "?" for c in text)


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
