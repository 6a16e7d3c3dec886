"""Reading claims files: every key checked, every problem named at once, nothing executed."""
from __future__ import annotations

import pytest
import sympy
from support.paths import ROOT

import infoflow_smt as ifs
from infoflow_smt import claims
from infoflow_smt.limits import MAX_CLAIMS_BYTES

T = ifs.T


def one(**table) -> claims.Claim:
    [claim] = claims.parse({"claim": [{"name": "c", "target": "min_pairwise_dot", "expect": "feasible"} | table]})
    return claim


def problems(document) -> str:
    with pytest.raises(ifs.InvalidSpecError) as err:
        claims.parse(document)
    return str(err.value)


def test_a_one_architecture_claim_reads_with_the_commands_defaults():
    claim = one(heads=[1, 1], exponent="T/8 - 1")
    assert claim.heads == (1, 1) and not claim.every
    assert claim.architecture == ifs.Architecture(heads=(1, 1), embed_dim=32, input_dim=2, positional=False)
    assert claim.exponent == T / 8 - 1
    assert str(claim) == "min_pairwise_dot is feasible on 2 layers of 1 head, E=32, d=2; exponent T/8 - 1"


def test_defaults_follow_the_target_like_infoflow_decide():
    claim = one(target="specific_positions", heads=[1])
    assert claim.positional is True   # the target names fixed positions
    assert one(heads=[1], positional=False, input_dim=3).architecture.input_dim == 3


def test_an_every_architecture_claim_with_bounds_and_frontier():
    claim = one(architecture="every", max_layers=2, frontier=[[3, 1], [2, 2]], exponent="bounded")
    assert claim.every and claim.frontier == ((2, 2), (3, 1)) and claim.exponent == "bounded"
    assert "every (L, h) with L <= 2" in claim.where()


def test_the_defaults_table_applies_unless_a_claim_sets_its_own():
    document = {"defaults": {"embed_dim": 16, "timeout": 5},
                "claim": [{"name": "a", "target": "max_retrieval", "heads": [1], "expect": "feasible"},
                          {"name": "b", "target": "max_retrieval", "heads": [1], "expect": "feasible",
                           "embed_dim": "2*T"}]}
    a, b = claims.parse(document)
    assert (a.embed_dim, a.timeout) == (16, 5) and b.embed_dim == 2 * T


@pytest.mark.parametrize(("table", "named"), [
    ({"heads": [1], "heads_per_layer": [1]}, "unknown key 'heads_per_layer'"),
    ({"heads": [1], "target": "min_pairwise_dott"}, "unknown catalogue target 'min_pairwise_dott'"),
    ({"heads": [1], "target": "x[t] > 0"}, "unsupported construct: comparison"),
    ({"heads": [1], "expect": "maybe"}, "expect = 'maybe'"),
    ({"heads": [0]}, "heads = [0]"),
    ({}, "give either heads"),
    ({"heads": [1], "architecture": "every"}, "give either heads"),
    ({"architecture": "all"}, "architecture = 'all'"),
    ({"heads": [1], "frontier": [[1, 1]]}, "frontier is a claim over every architecture"),
    ({"architecture": "every", "frontier": [[1]]}, "frontier = [[1]]"),
    ({"heads": [1], "max_layers": 2}, "max_layers = 2"),
    ({"heads": [1], "exponent": "__import__('os')"}, "exponent = \"__import__('os')\""),
    ({"heads": [1], "exponent": [1]}, "exponent = [1]"),
    ({"heads": [1], "embed_dim": "T - T"}, "embed_dim"),
    ({"heads": [1], "embed_dim": 0}, "embed_dim = 0"),
    ({"heads": [1], "timeout": -1}, "timeout = -1"),
    ({"heads": [1], "timeout": 1e308}, "timeout = 1e+308: give a positive number of seconds up to 1000000"),
    ({"heads": [1], "exponent": "oo - oo"}, "exponent = 'oo - oo': 'oo - oo' has no real value"),
    ({"heads": [1], "exponent": "0*oo"}, "has no real value"),
    ({"heads": [1], "positional": "yes"}, "positional = 'yes'"),
])
def test_each_bad_value_is_named(table, named):
    assert named in problems({"claim": [{"name": "c", "target": "min_pairwise_dot", "expect": "feasible"} | table]})


def test_every_problem_of_a_file_is_listed_at_once():
    message = problems({"claims": [], "claim": [{"name": "a", "target": "nosuch", "heads": [1], "expect": "yes"},
                                                {"name": "a", "target": "max_retrieval", "heads": [1],
                                                 "expect": "feasible"},
                                                {"name": "a", "target": "max_retrieval", "heads": [1],
                                                 "expect": "feasible"}]})
    assert "unknown table claims" in message and "unknown catalogue target 'nosuch'" in message
    assert "expect = 'yes'" in message and "claim 3 ('a'): the name is used twice" in message
    assert "no [[claim]] tables" in problems({"defaults": {}})
    assert "[defaults] may set only" in problems({"defaults": {"heads": [1]}, "claim": [
        {"name": "a", "target": "max_retrieval", "heads": [1], "expect": "feasible"}]})


def test_a_file_that_is_not_toml_or_not_there_is_one_error(tmp_path):
    bad = tmp_path / "claims_bad.toml"
    bad.write_text("[[claim]\nname = 1\n")
    with pytest.raises(ifs.InvalidSpecError, match="is not TOML"):
        claims.load(bad)
    with pytest.raises(ifs.InvalidSpecError, match="cannot read"):
        claims.load(tmp_path / "missing.toml")


def test_expressions_are_read_with_a_whitelist():
    assert claims.expression("(T - 3)/9") == (T - 3) / 9
    assert claims.expression("oo") is sympy.oo and claims.expression("0.5") == sympy.Rational(1, 2)
    assert claims.expression("-T**2 + 1") == 1 - T**2
    for text in ("T/0", "T**100", "abs(T)", "x", "T +", "'1'", "T" * 300):
        with pytest.raises(ifs.InvalidSpecError, match="not an expression in T"):
            claims.expression(text)


def test_the_example_file_reads():
    loaded = claims.load(ROOT / "docs" / "claims.toml")
    assert len(loaded) >= 12 and any(c.every for c in loaded) and any(not c.every for c in loaded)
    assert any(c.causal for c in loaded) and any(c.readout == "last" for c in loaded)   # decoder settings stated


@pytest.mark.parametrize("text", ["oo - oo", "0*oo", "oo/oo", "(-1)**(1/2)"])
def test_an_exponent_without_a_real_value_is_refused(text):
    """``oo - oo`` is NaN: a claim compared with it would match nothing and mean nothing."""
    with pytest.raises(ifs.InvalidSpecError, match="has no real value"):
        claims.expression(text)


def test_a_file_nested_thousands_deep_is_one_error(tmp_path):
    deep = tmp_path / "claims_deep.toml"
    deep.write_text("x = " + "[" * 5000 + "]" * 5000 + "\n")
    with pytest.raises(ifs.InvalidSpecError, match="nested too deep"):
        claims.load(deep)


def test_what_is_not_a_plain_file_is_refused_unread(tmp_path):
    import os
    fifo = tmp_path / "claims_fifo.toml"
    os.mkfifo(fifo)   # opening it to read would wait for a writer forever
    with pytest.raises(ifs.InvalidSpecError, match="not a plain file"):
        claims.load(fifo)
    with pytest.raises(ifs.InvalidSpecError, match="not a plain file"):
        claims.load("/dev/zero")   # read whole, it would fill the memory
    with pytest.raises(ifs.InvalidSpecError, match="is a folder"):
        claims.load(tmp_path)
    big = tmp_path / "claims_big.toml"
    big.write_text("#" * (MAX_CLAIMS_BYTES + 1))
    with pytest.raises(ifs.InvalidSpecError, match="over the limit"):
        claims.load(big)


def test_a_claim_states_its_decoder_setting():
    """causal, readout, rank_aware and seq_len, each read into the claim and its architecture, and named in it."""
    claim = one(target="match2:prefix=true", heads=[1], causal=True, rank_aware=True, seq_len=16)
    assert claim.architecture == ifs.Architecture(heads=(1,), embed_dim=32, input_dim=2, positional=False,
                                                  causal=True, rank_aware=True)
    assert claim.seq_len == 16 and claim.positional is False   # under the mask range(1, o+1) needs no positions
    assert "causal mask, rank rule, at T = 16" in str(claim)
    last = one(target="max(F0(x[T], x[t]) for t in T)", heads=[1], readout="last")
    assert last.architecture.readout == "last" and last.positional is False and "read at the last position" in str(last)
    assert one(target="hop_k", heads=[1, 1, 1]).readout == "last"                    # the paper's readout
    assert one(target="hop_k", heads=[1, 1, 1], readout="output").readout == "output"
    assert one(heads=[1]).where() == "1 layer of 1 head, E=32, d=2"                  # nothing on, nothing said


def test_the_defaults_table_may_state_the_setting():
    [claim] = claims.parse({"defaults": {"causal": True, "seq_len": 8},
                            "claim": [{"name": "c", "target": "match2:prefix=true", "heads": [1], "expect": "feasible"}]})
    assert claim.causal and claim.seq_len == 8


@pytest.mark.parametrize(("table", "named"), [
    ({"causal": "yes"}, "causal = 'yes': give a true or false"),
    ({"rank_aware": 1}, "rank_aware = 1: give a true or false"),
    ({"readout": "first"}, "readout = 'first': give one of 'output', 'last'"),
    ({"seq_len": 1}, "seq_len = 1: give a whole number >= 2"),
    ({"architecture": "every", "heads": None, "readout": "last"}, "readout = 'last' with architecture = \"every\""),
    ({"architecture": "every", "heads": None, "rank_aware": True}, "rank_aware = true with architecture"),
    ({"architecture": "every", "heads": None, "seq_len": 8}, "seq_len = 8 with architecture = \"every\": the frontier"),
])
def test_a_setting_that_cannot_be_honoured_is_named(table, named):
    table = {"name": "c", "target": "min_pairwise_dot", "heads": [1], "expect": "feasible"} | table
    assert named in problems({"claim": [{k: v for k, v in table.items() if v is not None}]})
