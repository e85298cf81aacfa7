"""How an analysis option is declared: a field's metadata (:class:`Option`, made by
:func:`option`) with its words, its check, its flag (:class:`Flag`) and its role, and the
checks a declaration names most (:class:`Count`, :class:`Choice`). :mod:`onnxroof.options`
declares every option of :class:`~onnxroof.options.AnalysisOptions` with these.

>>> Count(1)("batch", 4)  # a whole number of 1 or more: passes
>>> Choice(("prefill", "decode"))("phase", "train")
Traceback (most recent call last):
    ...
onnxroof.core.errors.OptionError: phase 'train': choose prefill or decode
"""

from __future__ import annotations

import numbers
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .errors import OptionError
from .tensors import MAX_DIM, MAX_DIM_TEXT

Check = Callable[[str, Any], None]  # (the option's name, its value): raises an OptionError naming it


@dataclass(frozen=True)
class Flag:
    """The command-line flag that sets an option: its name, its help, and where ``--help`` lists
    it (its group, and its place among the group's flags)."""

    name: str
    group: str
    place: int
    help: str
    metavar: str | None = None
    choices: tuple[str, ...] | None = None  # (a Choice check's choices are the flag's, unless given)
    repeatable: bool = False  # given once per item (--dim a=1 --dim b=2): the option is the list
    switch: bool = False  # takes no value: the option is whether it is given
    negated: bool = False  # a switch that turns the option off (--no-overhead)


@dataclass(frozen=True)
class Option:
    """An analysis option's declaration (a field's metadata: :func:`option` makes it)."""

    doc: str
    check: Check
    flag: Flag | None = None
    role: str | None = None  # COUNTING, BINDING or TIMING_ROLE: kept in a formula's analyses
    back: bool = False  # read only by the stages after shape inference (pipeline.BACK_OPTIONS)
    convert: Callable[[str, Any], Any] | None = None  # the value as kept (a list as a tuple)


def option(
    default: Any,
    doc: str,
    check: Check,
    flag: Flag | None = None,
    role: str | None = None,
    back: bool = False,
    convert: Callable[[str, Any], Any] | None = None,
) -> Any:
    """A field of :class:`AnalysisOptions` with its declaration (:class:`Option`) as metadata."""
    return field(default=default, metadata={"option": Option(doc, check, flag, role, back, convert)})


@dataclass(frozen=True)
class Count:
    """A whole number in [minimum, MAX_DIM] (or [minimum, ``maximum``], a count with a range of
    its own); None is no value unless ``required``."""

    minimum: int
    maximum: int | None = None
    required: bool = False

    def __call__(self, option: str, value: object) -> None:
        if value is not None or self.required:
            check_count(option, value, None, self.minimum, self.maximum)


@dataclass(frozen=True)
class Choice:
    """None or one of ``choices``."""

    choices: tuple[str, ...]

    def __call__(self, option: str, value: object) -> None:
        if value is not None and value not in self.choices:
            raise OptionError(
                option, f"{{opt.{option}}} {{value}}: choose {' or '.join(self.choices)}", value=shown(value)
            )


def shown(value: object) -> str:
    """A value as a message shows it: its repr, cut short (a long one is not echoed whole)."""
    text = repr(value)
    return text if len(text) <= 60 else text[:40] + f"... ({type(value).__name__})"


def check_count(option: str, value: object, where: str | None, minimum: int, maximum: int | None = None) -> None:
    """A whole number in [minimum, MAX_DIM] (or [minimum, ``maximum``], a count with a range of its
    own, said in the message): not a bool, a float or a string. ``where`` is the mapping key it is
    the value of (None: the option's own value, which a flag may have given)."""
    head = f"{{opt.{option}}} {{value}}" if where is None else f"{option}[{{where!r}}] = {{value}}"
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise OptionError(option, head + ": give a whole number (an int)", where=where, value=shown(value))
    value = int(value)  # (a numpy integer: compared as a Python int)
    if maximum is not None and not minimum <= value <= maximum:
        raise OptionError(
            option,
            head + ": give a whole number from {minimum} to {maximum:,}",
            where=where,
            value=int(value),
            minimum=minimum,
            maximum=maximum,
        )
    if value < minimum:
        raise OptionError(
            option, head + ": give a whole number of {minimum} or more", where=where, value=int(value), minimum=minimum
        )
    if value > MAX_DIM:
        raise OptionError(option, head + ": over the limit, {limit}", where=where, value=int(value), limit=MAX_DIM_TEXT)
