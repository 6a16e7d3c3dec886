"""The question's setting in words, as every view names it: the causal mask, the readout at the last position and
the rank rule, when they are on (the papers' default is none of them: the extra output token reads the answer,
attention sees every position, and a head's rank is abstracted away).

A caption, a table's title, a JSON document and a notebook view of a masked, last-token or rank-aware question
say so, so that two pictures of the same target under different settings are never read as one (a causal phase
diagram's frontier is not the unmasked one's).

>>> from infoflow_smt.model.architecture import Architecture
>>> words(Architecture(heads=(1,), causal=True, readout="last", rank_aware=True))
('causal mask', 'read at the last position', 'rank rule')
>>> line([Architecture(heads=(1,)), Architecture(heads=(2,), causal=True)])
'causal mask (some cells)'
>>> line([Architecture(heads=(1,))])
''
"""
from __future__ import annotations

from collections.abc import Iterable

MASK, LAST, RANK = "causal mask", "read at the last position", "rank rule"


def words(arch) -> tuple[str, ...]:
    """The settings past the papers' defaults that ``arch`` has on, in words, in a fixed order."""
    return tuple(word for word, on in ((MASK, getattr(arch, "causal", False)),
                                       (LAST, getattr(arch, "readout", "output") == "last"),
                                       (RANK, getattr(arch, "rank_aware", False))) if on)


def line(archs: Iterable) -> str:
    """The settings of a set of architectures (a sweep's cells, a front's points) in one line: each setting on
    in all of them, or on in some (``(some cells)``); empty when none is on."""
    archs = list(archs)
    if not archs:
        return ""
    each = [set(words(a)) for a in archs]
    shown = []
    for word in (MASK, LAST, RANK):
        if all(word in w for w in each):
            shown.append(word)
        elif any(word in w for w in each):
            shown.append(f"{word} (some cells)")
    return ", ".join(shown)


def to_json(archs: Iterable) -> dict[str, object]:
    """What a JSON document's ``setting`` holds: the line, and each setting on or off (``null`` where the
    architectures differ)."""
    archs = list(archs)

    def shared(name: str, value) -> bool | None:
        found = {getattr(a, name, None) == value for a in archs}
        return found.pop() if len(found) == 1 else None

    return {"summary": line(archs), "causal": shared("causal", True), "readout_last": shared("readout", "last"),
            "rank_aware": shared("rank_aware", True)}
