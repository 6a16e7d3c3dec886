"""Function names the target language refuses, each with the reason a refusal gives.

Any other name a target calls (``f1``, ``F0``, ``g``) is an uninterpreted smooth function, and a verdict holds
for generic smooth functions (docs/model.md, section 1). So a name that means a function of its own is
refused, never read as an uninterpreted one:

* a function that is not smooth (``sign``, ``floor``, ``abs``, ``relu``): read as a smooth function, the
  target would be another one, and a "yes" for it would be a false "yes" (``max(sign(x[t]) for t in T)``);
* a particular smooth function (``exp``, ``sin``, ``tanh``): it obeys identities a generic smooth function
  does not (``exp(a + b) = exp(a) * exp(b)`` makes ``exp(f1(x[s]) + f2(x[t]))`` a product, of rank 1, where
  ``f3(f1(x[s]) + f2(x[t]))`` has no bounded rank), so the model's verdict for an uninterpreted function
  need not be the verdict for it;
* ``softmax``, what a head computes over positions rather than a function of values; ``pow``, written ``**``;
  and Python's other builtins, which the text, read and never run, does not call.

>>> refusal("sign").split(":")[0]
"'sign' is not smooth (discontinuous at 0)"
>>> refusal("f1") is None
True
"""
from __future__ import annotations

_DISCONTINUOUS = "discontinuous"
_TIES = "not differentiable where its arguments tie"
# the reason each function is not smooth, in a few words
NOT_SMOOTH = {
    "sign": "discontinuous at 0", "sgn": "discontinuous at 0", "signum": "discontinuous at 0",
    "step": "discontinuous at 0", "heaviside": "discontinuous at 0", "indicator": _DISCONTINUOUS,
    "floor": "discontinuous at every integer", "ceil": "discontinuous at every integer",
    "round": "discontinuous at every half-integer", "rint": "discontinuous at every half-integer",
    "trunc": "discontinuous at every integer", "frac": "discontinuous at every integer",
    "fract": "discontinuous at every integer", "mod": _DISCONTINUOUS, "fmod": _DISCONTINUOUS,
    "remainder": _DISCONTINUOUS, "int": "discontinuous at every integer", "bool": "discontinuous at 0",
    "where": _DISCONTINUOUS, "select": _DISCONTINUOUS, "argsort": _DISCONTINUOUS,
    "sort": "not differentiable where two values tie",
    "abs": "not differentiable at 0", "fabs": "not differentiable at 0",
    "relu": "not differentiable at 0", "relu6": "not differentiable at 0 and 6",
    "leaky_relu": "not differentiable at 0", "hardtanh": "not differentiable at -1 and 1",
    "hardsigmoid": "not differentiable at its corners", "hardswish": "not differentiable at its corners",
    "clip": "not differentiable at its bounds", "clamp": "not differentiable at its bounds",
    "minimum": _TIES, "maximum": _TIES, "fmin": _TIES, "fmax": _TIES,
    "sqrt": "not differentiable at 0, undefined below it", "cbrt": "not differentiable at 0",
    "log": "undefined at 0 and below", "log2": "undefined at 0 and below",
    "log10": "undefined at 0 and below",
    "log1p": "undefined at -1 and below", "tan": "undefined at every odd multiple of pi / 2",
    "arcsin": "undefined beyond -1 and 1", "arccos": "undefined beyond -1 and 1",
    "asin": "undefined beyond -1 and 1", "acos": "undefined beyond -1 and 1",
}
# a particular smooth function, with an identity no generic smooth function has (None: none named)
PARTICULAR = {
    "exp": "exp(a + b) = exp(a) * exp(b)", "expm1": "expm1(a) = exp(a) - 1",
    "sin": "sin(a + b) = sin(a) cos(b) + cos(a) sin(b)", "cos": "cos(a + b) = cos(a) cos(b) - sin(a) sin(b)",
    "sinh": "sinh(a + b) = sinh(a) cosh(b) + cosh(a) sinh(b)",
    "cosh": "cosh(a + b) = cosh(a) cosh(b) + sinh(a) sinh(b)",
    "tanh": "tanh(a + b) = (tanh(a) + tanh(b)) / (1 + tanh(a) tanh(b))",
    "sigmoid": "sigmoid(a) + sigmoid(-a) = 1", "softplus": "softplus(a) - softplus(-a) = a",
    "gelu": None, "silu": None, "swish": None, "erf": "erf(-a) = -erf(a)", "atan": "atan(-a) = -atan(a)",
    "arctan": "arctan(-a) = -arctan(a)",
}
PYTHON_BUILTINS = frozenset((
    "aiter", "all", "anext", "any", "ascii", "bin", "breakpoint", "bytearray", "bytes", "callable", "chr",
    "classmethod", "compile", "complex", "delattr", "dict", "dir", "divmod", "enumerate", "eval", "exec", "exit",
    "filter", "float", "format", "frozenset", "getattr", "globals", "hasattr", "hash", "help", "hex", "id",
    "input", "isinstance", "issubclass", "iter", "len", "list", "locals", "map", "memoryview", "next", "object",
    "oct", "open", "ord", "pow", "print", "property", "quit", "repr", "reversed", "set", "setattr", "slice",
    "sorted", "staticmethod", "str", "super", "tuple", "type", "vars", "zip",
))
REFUSED = frozenset(NOT_SMOOTH) | frozenset(PARTICULAR) | PYTHON_BUILTINS | {"softmax"}


def refusal(name: str) -> str | None:
    """Why ``name`` cannot be called in a target (one line), or None when it may name an uninterpreted
    smooth function. Capitals do not make a mathematical function another one: ``Floor`` is refused as
    ``floor`` is (Python's builtins are refused as Python spells them)."""
    key = name.lower()
    if key in NOT_SMOOTH:
        return (f"{name!r} is not smooth ({NOT_SMOOTH[key]}): the model's uninterpreted functions are smooth, "
                "and a smooth surrogate would be a different target")
    if key in PARTICULAR:
        identity = PARTICULAR[key]
        lacks = (f"{identity} holds for it and for no generic one" if identity else
                 "a particular one obeys identities a generic one does not")
        return (f"{name!r} is reserved: it is a particular smooth function, and the model's verdicts hold for "
                f"generic (uninterpreted) ones ({lacks}); write an uninterpreted name such as f1")
    if key == "softmax":
        return ("'softmax' is reserved: it is what an attention head computes over positions, not a function "
                "of values; write the selection (max, argmax) or the average (mean) it stands for")
    if name == "pow":
        return "'pow' is reserved: write a power as a ** b"
    if name in PYTHON_BUILTINS:
        return (f"{name!r} is reserved: a Python builtin, which the text (read, never run) does not call; as "
                "an uninterpreted function it would mean a random smooth function")
    return None
