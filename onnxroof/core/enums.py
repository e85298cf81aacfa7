"""String-valued enums: members that are also their text, so JSON, CSV and f-strings write the
same words the plain strings did.

>>> class Colour(TextEnum):
...     RED = "red"
>>> Colour.RED == "red", str(Colour.RED), f"{Colour.RED:>5}", Colour("red") is Colour.RED
(True, 'red', '  red', True)
"""

from __future__ import annotations

from enum import Enum


class TextEnum(str, Enum):
    """``enum.StrEnum`` semantics on Python 3.10 too: ``str()`` and ``format()`` give the value
    (a plain ``(str, Enum)`` mixin formats as ``Class.MEMBER`` on some Python versions)."""

    def __str__(self) -> str:
        return self.value

    def __format__(self, spec: str) -> str:
        return format(self.value, spec)
