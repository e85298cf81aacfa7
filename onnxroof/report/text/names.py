"""Names in a fixed width (model text, untrusted): middle-clipped so a scoped name keeps its
start and its op, with the part that tells look-alike rows apart kept (issue 47)."""

from __future__ import annotations

import os

from ...core.text import printable


def clip(text: str, width: int) -> str:
    if len(text) <= width and text.isprintable():  # most names: nothing to replace or cut
        return text
    text = printable(text)  # model names are untrusted
    if len(text) <= width:
        return text
    head = (width - 1) // 2  # middle-clipped: a scoped name keeps its start and its op at the end
    return text[:head] + "…" + text[len(text) - (width - 1 - head) :]


def distinct_clips(names: list[str], width: int) -> list[str]:
    """``names`` clipped to ``width`` so that rows stay told apart: when a name is too long, the
    path all of them share (up to its last '/') is dropped first, since a middle clip of scoped
    names cuts what differs between them (the layer index); what is still too long is clipped in
    the middle (:func:`clip`).

    >>> distinct_clips(["/m/encoder/layer.11/intermediate/dense/MatMul",
    ...                 "/m/encoder/layer.2/intermediate/dense/MatMul"], 36)
    ['…layer.11/intermediate/dense/MatMul', '…layer.2/intermediate/dense/MatMul']
    >>> distinct_clips(["conv2d_13", "conv2d_4"], 36)
    ['conv2d_13', 'conv2d_4']
    """
    if all(len(name) <= width for name in names) or len(names) < 2:
        return [clip(name, width) for name in names]
    shared = os.path.commonprefix(names)
    cut = shared.rfind("/") + 1
    return [clip("…" + name[cut:], width) if cut > 1 else clip(name, width) for name in names]


def apart_clips(names: list[str], width: int) -> list[str]:
    """``names`` middle-clipped to ``width`` (:func:`clip`), except where two different names would
    clip alike: those keep the part that tells them apart (what follows their shared start, up to
    their shared end), and the cut falls in what they share.

    >>> apart_clips(["/model/layers.10/self_attn/q_proj/MatMul", "/model/layers.11/self_attn/q_proj/MatMul"], 20)
    ['…layers.10…oj/MatMul', '…layers.11…oj/MatMul']
    """
    clips = [clip(name, width) for name in names]
    alike: dict[str, set[str]] = {}
    for name, short in zip(names, clips):
        alike.setdefault(short, set()).add(name)
    for short, group in alike.items():
        if len(group) < 2:
            continue
        start = len(os.path.commonprefix(list(group)))
        end = len(os.path.commonprefix([n[::-1] for n in group]))
        for index, name in enumerate(names):
            if clips[index] == short and name in group:
                clips[index] = _around(printable(name), start, len(name) - end, width)
    return clips


def _around(name: str, start: int, end: int, width: int) -> str:
    """``name`` cut to ``width`` keeping ``name[start:end]`` whole where it fits, with the end of
    what precedes it and the end of what follows (the op), half the room each, cuts marked '…'."""
    start = min(start, end)
    middle, before, after = name[start:end], name[:start], name[end:]
    if len(middle) >= width - 2:
        return clip(name[start:], width)
    room = width - len(middle)
    before_room = min(len(before), room // 2)
    after_room = min(len(after), room - before_room)
    before_room = min(len(before), room - after_room)  # what the end does not need goes to the start

    def tail(text: str, keep: int) -> str:
        return text if len(text) <= keep else ("…" + text[len(text) - keep + 1 :] if keep > 1 else "")

    return tail(before, before_room) + middle + tail(after, after_room)
