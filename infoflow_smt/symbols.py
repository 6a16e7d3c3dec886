"""The sequence-length symbol shared by every symbolic quantity (exponents, widths, counts)."""
from __future__ import annotations

import sympy

T = sympy.Symbol("T", positive=True, integer=True)
