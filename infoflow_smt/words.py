"""Small words every layer's messages share (the parser's errors, architectures' shapes, explanations).

It imports nothing of the package, so the lowest layer may use it.
"""
from __future__ import annotations


def plural(count: int, word: str) -> str:
    """The count and the word, with an ``s`` unless the count is one.

    >>> plural(1, "head"), plural(2, "head"), plural(0, "layer")
    ('1 head', '2 heads', '0 layers')
    """
    return f"{count} {word}{'' if count == 1 else 's'}"
