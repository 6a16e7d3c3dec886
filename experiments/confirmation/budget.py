"""Wall-time budgets as users write them: ``60``, ``60.5``, ``"60s"``, ``"2m"``, ``"1.5 min"``, ``"1h"``.

One parser for ``experiments.confirm(v, budget=...)`` and for a command line's ``--budget 60s`` (the
``infoflow decide ... --train --budget`` flag calls the same function). Bad values raise
``infoflow_smt.InvalidSpecError`` (a ``ValueError``) naming the value.

>>> parse_budget("2m"), parse_budget(45), parse_budget("1.5 s")
(120.0, 45.0, 1.5)
"""
from __future__ import annotations

import math
import re

_UNITS = {"": 1.0, "s": 1.0, "sec": 1.0, "secs": 1.0, "second": 1.0, "seconds": 1.0,
          "m": 60.0, "min": 60.0, "mins": 60.0, "minute": 60.0, "minutes": 60.0,
          "h": 3600.0, "hr": 3600.0, "hour": 3600.0, "hours": 3600.0}
_TEXT = re.compile(r"\s*([0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)\s*([A-Za-z]*)\s*")
MAX_BUDGET_S = 7 * 24 * 3600.0   # a week: anything longer is a typo, not a training budget


def _invalid(value: object, why: str) -> Exception:
    from infoflow_smt import InvalidSpecError  # lazily: keeps this module importable on its own

    return InvalidSpecError(f"budget {value!r}: {why}", subject="budget")


def parse_budget(value: object) -> float:
    """Seconds of wall time, finite and positive, from a number or a text with an optional unit."""
    if isinstance(value, bool):
        raise _invalid(value, "expected seconds as a number or a text such as '60s' or '2m'")
    if isinstance(value, (int, float)):
        seconds = float(value)
    elif isinstance(value, str):
        match = _TEXT.fullmatch(value)
        if match is None or match.group(2).lower() not in _UNITS:
            raise _invalid(value, "expected a number with an optional unit s, m or h, e.g. '60s' or '2m'")
        seconds = float(match.group(1)) * _UNITS[match.group(2).lower()]
    else:
        raise _invalid(value, f"expected a number or a text, got {type(value).__name__}")
    if not math.isfinite(seconds) or seconds <= 0:
        raise _invalid(value, "must be finite and greater than 0 seconds")
    if seconds > MAX_BUDGET_S:
        raise _invalid(value, f"more than {MAX_BUDGET_S:.0f} s (a week)")
    return seconds
