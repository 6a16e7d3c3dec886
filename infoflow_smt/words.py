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


MAX_SHOWN = 400   # characters of a user's text that one message repeats (the rest is cut to "...")


def printable(text: object, limit: int | None = MAX_SHOWN) -> str:
    """``text`` on one line that a terminal shows as it is: runs of whitespace (newlines included) become one
    space, and every other character a terminal would act on (escape sequences, other control characters,
    bidirectional overrides) is written out as ``\\xNN`` or ``\\uNNNN``; beyond ``limit`` characters it is cut.

    >>> printable("max(x[t])\\x1b[31m\\n# red")
    'max(x[t])\\\\x1b[31m # red'
    """
    flat = " ".join(str(text).split())
    shown = "".join(c if c.isprintable() else f"\\x{ord(c):02x}" if ord(c) < 256 else f"\\u{ord(c):04x}"
                    for c in flat)
    return shown if limit is None or len(shown) <= limit else shown[:limit] + "..."
