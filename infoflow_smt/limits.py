"""Every size limit of the project, in one place (README, "Limits"; docs/model.md, section 7).

Each bounds the work or the memory that one question can ask for, whatever its input: the parser and
``Architecture`` refuse a larger value in one line that names the limit and the value, and the solver's
default deadline bounds the time. None of them cuts a result short: a target or architecture inside the
limits is decided in full (or answered UNKNOWN at its deadline, never INFEASIBLE).
"""
from __future__ import annotations

import operator

MAX_TEXT_CHARS = 20_000   # characters of target text
MAX_POSITION = 256        # fixed positions x[k], x[T-k] and range bounds: a replay needs T > k
MAX_RANK = 64             # k of kth_largest
MAX_OFFSET = 64           # |k| of an offset x[t-k]
MAX_DEPTH = 200           # levels of the syntax tree (a sum of n terms has n): each later step recurses through it
MAX_NESTING = 32          # reductions nested inside one another (dependent selections in a chain)
MAX_JOINT = 8             # variables of one joint reduction (its variable orders are searched)
MAX_EVALUATION = 10**8    # index tuples one evaluation of a target may visit per input (Target.evaluate)
MAX_REPLAY_WORK = 8**6     # the same, for the replay of a solver's answer (many per decision, at T >= 8)
MAX_INPUT_DIM = 1024      # d: a replay holds samples x T x d numbers, a bilinear form d x d
# layers of an architecture (the encoding grows linearly with them): the diagonal of the catalogue's widest target,
# intrinsic_dimension:D=64, needs D + 1 layers of one head, and decide_all walks to it
MAX_LAYERS = 65
MAX_HEADS = 256           # heads in one layer
DEFAULT_TIMEOUT = 60.0    # seconds: the deadline of one answer when the caller gives none
MAX_TIMEOUT = 1_000_000.0  # seconds (11.6 days): z3 takes its timeout in milliseconds as a 32-bit number
MAX_SAMPLES = 100_000     # random inputs of one replay: samples x T x d numbers, and the target's values on them
MAX_WORKERS = 1024        # processes of one sweep
MAX_CLAIMS_BYTES = 1 << 20  # bytes of a claims file, read whole (thousands of claims, each a minute to check)
# a compiled witness (experiments.compilation): its weights are E x E per head, its check draws samples x T inputs
MAX_COMPILE_WIDTH = 1024       # E of a compiled model
MAX_COMPILE_LENGTH = 4096      # T of its check
MAX_COMPILE_POSITIONS = 1 << 22  # samples x the longest T of one check (the inputs and the target's values)
MAX_BETA = 1e6                 # the softmax's inverse temperature: beta x score stays finite in float64
MAX_DIGITS = 18           # digits of a whole number read from text (a catalogue parameter, a subset's number):
                          # it fits a 64-bit integer


def whole(value) -> int | None:
    """``value`` as a Python int when it is a whole number (an int or a numpy integer, never a bool), else None:
    every argument that takes an int takes a numpy integer too."""
    if isinstance(value, bool) or type(value).__name__ == "bool_":
        return None
    try:
        return operator.index(value)
    except TypeError:
        return None
