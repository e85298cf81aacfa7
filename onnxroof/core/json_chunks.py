"""A list already written as compact JSON, passed on in chunks: what keeps a big model's JSON
document from sitting in memory whole (result/ writes its long lists with it, report/json.py
passes them on)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from itertools import islice


class Encoded:
    """A list already written as compact JSON, one item at a time: :func:`compact_chunks`
    passes it on in chunks of a few hundred items, so a big model's document never sits in
    memory whole (each fresh megabyte costs page faults, not just copying). A list the document
    holds twice (``keep``) keeps its chunks from the first writing for the second."""

    def __init__(self, items: Iterable[str], keep: bool = False):
        self.items = iter(items)
        self.kept: list[str] | None = [] if keep else None

    def chunks(self, batch: int = 512) -> Iterator[str]:
        if self.kept:  # written once already
            yield from self.kept
            return
        for chunk in self._encode(batch):
            if self.kept is not None:
                self.kept.append(chunk)
            yield chunk

    def _encode(self, batch: int) -> Iterator[str]:
        # the separators are chunks of their own: prefixing one to a joined batch would copy it again
        separator = "["
        while part := list(islice(self.items, batch)):
            yield separator
            yield ",".join(part)
            separator = ","
        yield "[]" if separator == "[" else "]"
