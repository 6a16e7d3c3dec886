"""Architecture: its checks (every problem at once), widths that grow with T, and what one covers."""
from __future__ import annotations

import dataclasses

import pytest
import sympy

import infoflow_smt as ifs
from infoflow_smt.errors import InvalidSpecError
from infoflow_smt.limits import MAX_HEADS, MAX_LAYERS
from infoflow_smt.model.architecture import Architecture, shape_text
from infoflow_smt.symbols import T


def test_bad_architecture_lists_every_problem():
    with pytest.raises(ifs.InvalidSpecError, match=r"layer 1 has 0 heads.*embed_dim must be positive"):
        ifs.Architecture(heads=(0,), embed_dim=-1)
    with pytest.raises(ValueError, match="heads is empty"):
        ifs.Architecture(heads=())


@pytest.mark.parametrize("kwargs, message", [
    ({"heads": "12"}, "heads must be a sequence of positive integers"),
    ({"heads": (1, True)}, "layer 2 has True heads"),
    ({"heads": (1,) * (MAX_LAYERS + 1)}, f"{MAX_LAYERS + 1} layers is over the limit of {MAX_LAYERS}"),
    ({"heads": (MAX_HEADS + 1,)}, f"over the limit of {MAX_HEADS}"),
    ({"heads": (1,), "embed_dim": 1.5}, "embed_dim must be an int or a sympy expression in T"),
    ({"heads": (1,), "embed_dim": 4 - T}, "embed_dim must be positive and finite for every large T"),
    ({"heads": (1,), "input_dim": 0}, "input_dim must be an integer >= 1, got 0"),
    ({"heads": (1,), "positional": "yes"}, "positional must be True or False"),
])
def test_each_documented_refusal(kwargs, message):
    with pytest.raises(InvalidSpecError, match=message):
        Architecture(**kwargs)


def test_an_input_error_is_a_value_error_naming_the_architecture():
    with pytest.raises(ValueError, match="invalid architecture: "):
        Architecture(heads=(0,))


def test_a_single_int_is_one_layer_and_the_record_is_frozen():
    arch = Architecture(heads=3, embed_dim=24, input_dim=2)
    assert arch.heads == (3,) and arch.layers == 1 and arch.head_dim(1) == 8
    with pytest.raises(dataclasses.FrozenInstanceError):
        arch.embed_dim = 8


def test_a_width_growing_with_T():
    arch = Architecture(heads=(2,), embed_dim=2 * T, input_dim=2)
    assert arch.width == 2 * T and arch.width_at(8) == 16 and arch.head_dim(1) == T
    assert Architecture(heads=(1,), embed_dim=sympy.Integer(16)).embed_dim == 16  # a number stays an int


def test_covers_means_every_resource_of_the_other():
    assert Architecture(heads=(1, 2, 2)).covers(Architecture(heads=(2, 1)))
    assert Architecture(heads=(2, 2)).covers(Architecture(heads=(2, 2)))
    assert not Architecture(heads=(2, 1)).covers(Architecture(heads=(1, 2)))        # last layers aligned
    assert not Architecture(heads=(4,)).covers(Architecture(heads=(1, 1)))          # fewer layers
    assert not Architecture(heads=(2,), embed_dim=16).covers(Architecture(heads=(1,), embed_dim=32))
    assert not Architecture(heads=(2,), positional=True).covers(Architecture(heads=(1,)))


@pytest.mark.parametrize("heads, text", [
    ((1,), "1 layer of 1 head"), ((1, 1), "2 layers of 1 head"), ((3, 3), "2 layers of 3 heads"),
    ((3, 2), "2 layers with 3 and 2 heads"), ((1, 2, 4), "3 layers with 1, 2 and 4 heads"),
])
def test_shapes_in_words(heads, text):
    assert shape_text(heads) == text == Architecture(heads=heads).shape


def test_with_heads_keeps_everything_else():
    arch = ifs.Architecture(heads=(1,), embed_dim=16, input_dim=3, positional=True)
    assert arch.with_heads((2, 2)) == ifs.Architecture(heads=(2, 2), embed_dim=16, input_dim=3, positional=True)
    assert str(arch) == "heads=(1,), E=16, d=3, positional"


def test_a_causal_architecture_says_so_and_covers_only_causal_ones():
    causal = Architecture(heads=(1, 1), embed_dim=16, input_dim=2, causal=True)
    assert str(causal).endswith(", causal") and causal.with_heads((2, 2)).causal
    assert not causal.covers(Architecture(heads=(1, 1), embed_dim=16, input_dim=2))
    assert causal.with_heads((2, 2)).covers(causal)


def test_a_causal_architecture_refuses_a_width_that_grows_with_t():
    with pytest.raises(InvalidSpecError, match="causal=True with a width that grows with T"):
        Architecture(heads=(1,), embed_dim=T * 2, causal=True)
    with pytest.raises(InvalidSpecError, match="causal must be True or False"):
        Architecture(heads=(1,), causal="yes")


# ---- the readout --------------------------------------------------------------------------------------
def test_the_readout_is_the_output_token_unless_asked():
    arch = Architecture(heads=(1, 2), embed_dim=8, input_dim=2)
    last = dataclasses.replace(arch, readout="last")
    assert arch.readout == "output" and str(arch) == "heads=(1, 2), E=8, d=2"
    assert str(last) == "heads=(1, 2), E=8, d=2, readout=last"
    assert last.with_heads((2, 2)).readout == "last"
    assert not last.covers(arch) and not arch.covers(last) and last.with_heads((2, 2)).covers(last)
    with pytest.raises(InvalidSpecError, match="readout must be one of 'output', 'last', got 'first'"):
        Architecture(heads=(1,), readout="first")
