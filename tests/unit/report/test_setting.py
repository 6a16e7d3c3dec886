"""The setting in words: every view names the causal mask, the readout at the last position and the rank rule
when they are on, and nothing when none is."""
from __future__ import annotations

import infoflow_smt as ifs
from infoflow_smt.report import setting


def test_each_setting_is_named_when_it_is_on():
    assert setting.words(ifs.Architecture(heads=(1,))) == ()
    assert setting.words(ifs.Architecture(heads=(1,), causal=True)) == ("causal mask",)
    assert setting.words(ifs.Architecture(heads=(1,), readout="last", rank_aware=True)) == (
        "read at the last position", "rank rule")


def test_a_set_of_architectures_says_which_setting_is_on_in_some_only():
    plain, masked = ifs.Architecture(heads=(1,)), ifs.Architecture(heads=(2,), causal=True, rank_aware=True)
    assert setting.line([masked, masked]) == "causal mask, rank rule"
    assert setting.line([plain, masked]) == "causal mask (some cells), rank rule (some cells)"
    assert setting.line([]) == ""
    assert setting.to_json([plain, masked]) == {"summary": "causal mask (some cells), rank rule (some cells)",
                                                "causal": None, "readout_last": False, "rank_aware": None}
    assert setting.to_json([plain])["causal"] is False
