"""Every size limit is enforced where the input arrives, at exactly its value, in one line naming it."""
from __future__ import annotations

import pytest

import infoflow_smt as ifs
from infoflow_smt import limits
from infoflow_smt.deadline import Deadline


def _joint(variables: int) -> str:
    names = [f"v{i}" for i in range(variables)]
    return f"min(f1({', '.join(f'x[{n}]' for n in names)}) for {' for '.join(f'{n} in T' for n in names)})"


def _nested(depth: int) -> str:
    text = "f1(x[v0])"
    for i in range(depth):
        text = f"max({text} + f1(x[v{i + 1}]) for v{i} in T)" if i + 1 < depth else f"max({text} for v{i} in T)"
    return text


# (a text at the limit, the same one past it, what the refusal says)
TEXTS = {
    "MAX_POSITION": (f"x[{limits.MAX_POSITION}]", f"x[{limits.MAX_POSITION + 1}]",
                     f"position {limits.MAX_POSITION + 1} is over the limit of {limits.MAX_POSITION}"),
    "MAX_OFFSET": (f"max(f1(x[t-{limits.MAX_OFFSET}]) for t in T)", f"max(f1(x[t-{limits.MAX_OFFSET + 1}]) for t in T)",
                   f"offset -{limits.MAX_OFFSET + 1} is over the limit of {limits.MAX_OFFSET}"),
    "MAX_RANK": (f"kth_largest({limits.MAX_RANK}, f1(x[t]) for t in T)",
                 f"kth_largest({limits.MAX_RANK + 1}, f1(x[t]) for t in T)",
                 f"rank k {limits.MAX_RANK + 1} is over the limit of {limits.MAX_RANK}"),
    "MAX_JOINT": (_joint(limits.MAX_JOINT), _joint(limits.MAX_JOINT + 1),
                  f"min binds {limits.MAX_JOINT + 1} variables, over the limit of {limits.MAX_JOINT}"),
    "MAX_NESTING": (_nested(limits.MAX_NESTING), _nested(limits.MAX_NESTING + 1),
                    f"reductions nest more than {limits.MAX_NESTING} deep"),
    "MAX_TEXT_CHARS": ("x[1]" + " " * (limits.MAX_TEXT_CHARS - 4), "x[1]" + " " * (limits.MAX_TEXT_CHARS - 3),
                       f"{limits.MAX_TEXT_CHARS + 1} characters, over the limit of {limits.MAX_TEXT_CHARS}"),
}


@pytest.mark.parametrize("limit", TEXTS)
def test_a_target_at_the_limit_is_parsed_and_one_past_it_refused(limit):
    inside, outside, message = TEXTS[limit]
    ifs.parse_target(inside)
    with pytest.raises(ifs.InvalidSpecError, match=message + r".*\(infoflow_smt\.limits\)") as caught:
        ifs.parse_target(outside)
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize("kwargs, past, message", [
    ({"heads": (1,) * limits.MAX_LAYERS}, {"heads": (1,) * (limits.MAX_LAYERS + 1)},
     f"{limits.MAX_LAYERS + 1} layers is over the limit of {limits.MAX_LAYERS}"),
    ({"heads": (limits.MAX_HEADS,)}, {"heads": (limits.MAX_HEADS + 1,)},
     f"layer 1 has {limits.MAX_HEADS + 1} heads, over the limit of {limits.MAX_HEADS}"),
    ({"heads": (1,), "input_dim": limits.MAX_INPUT_DIM}, {"heads": (1,), "input_dim": limits.MAX_INPUT_DIM + 1},
     f"input_dim {limits.MAX_INPUT_DIM + 1} is over the limit of {limits.MAX_INPUT_DIM}"),
])
def test_an_architecture_at_the_limit_is_built_and_one_past_it_refused(kwargs, past, message):
    ifs.Architecture(**kwargs)
    with pytest.raises(ifs.InvalidSpecError, match=message):
        ifs.Architecture(**past)


def test_an_evaluation_over_its_budget_is_refused_before_it_runs():
    import numpy as np
    target = ifs.parse_target(_joint(8))
    with pytest.raises(ifs.InvalidSpecError, match="MAX_EVALUATION"):
        target.evaluate(np.zeros((1, 16, 1)))   # 16**8 index tuples, over 10**8


def test_the_default_deadline_is_the_documented_one():
    assert Deadline().seconds == limits.DEFAULT_TIMEOUT
