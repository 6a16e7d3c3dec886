"""``infoflow compile`` and ``check_compiled`` under hostile input: every number within what the check can
honour, the --save and --plot paths checked before any work, and an unknown verdict reported as unknown (exit
3, reason "unknown"), never as infeasible."""
from __future__ import annotations

import dataclasses
import json

import pytest

pytest.importorskip("torch")

import infoflow_smt as ifs
from experiments.compilation import command
from experiments.compilation.check import check_compiled
from infoflow_smt.errors import CompileRefusal

FEASIBLE = ("max_retrieval", ifs.Architecture(heads=(1,), embed_dim=8, input_dim=2))


def _cli(capsys, *args):
    code = command.main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(scope="module")
def verdict():
    return ifs.decide(*FEASIBLE)


@pytest.mark.parametrize(("options", "says"), [
    ({"samples": 1}, "samples must be a whole number from 2"),   # one sample "held": no variance to divide by
    ({"samples": 10**9}, "samples must be a whole number from 2"),
    ({"betas": (16, float("inf"))}, "betas must be numbers above 0 and at most"),
    ({"betas": (1e308,)}, "MAX_BETA"), ({"betas": (0,)}, "betas must be"),
    ({"seq_lens": (10**7,)}, "seq_lens must be whole numbers from 2 to 4096"),
    ({"samples": 4096, "seq_lens": (4096,)}, "MAX_COMPILE_POSITIONS"),
])
def test_check_compiled_refuses_what_it_cannot_honour(verdict, options, says):
    with pytest.raises(ifs.InvalidSpecError, match=says):
        check_compiled(verdict, **({"betas": (16,), "seq_lens": (8,), "samples": 8} | options))


def test_an_unknown_verdict_is_refused_as_unknown_not_infeasible(verdict):
    unknown = dataclasses.replace(verdict, status=ifs.Status.UNKNOWN, witness=None, exponent=None)
    with pytest.raises(CompileRefusal) as refusal:
        check_compiled(unknown, betas=(16,), seq_lens=(8,), samples=8)
    assert refusal.value.reason == "unknown"


def test_the_command_exits_3_on_an_unknown_verdict(verdict, capsys, monkeypatch):
    """It waited its fixed 60 s, then printed reason "infeasible" and exited 1 (on 32 subset selections)."""
    unknown = dataclasses.replace(verdict, status=ifs.Status.UNKNOWN, witness=None, exponent=None)
    asked = []
    monkeypatch.setattr(ifs, "decide", lambda *args, **kwargs: asked.append(kwargs) or unknown)
    code, out, _ = _cli(capsys, "max_retrieval", "--heads", "1", "--timeout", "0.5", "--json")
    document = json.loads(out)
    assert code == 3 and document["verdict"] == "unknown" and document["refusal"]["reason"] == "unknown"
    assert asked == [{"timeout": 0.5}]


@pytest.mark.parametrize("option", [["--seq-len", "10000000"], ["--samples", "1000000000"], ["--samples", "1"],
                                    ["--embed-dim", "1000000000"], ["--beta", "inf"], ["--beta", "1e308"],
                                    ["--beta", "16,4"], ["--timeout", "1e308"], ["--heads", "1,0"],
                                    ["--samples", "4096", "--seq-len", "4096"]])
def test_numbers_are_refused_in_one_line_before_any_work(option, capsys, monkeypatch):
    monkeypatch.setattr(ifs, "decide", lambda *args, **kwargs: pytest.fail("decided despite bad input"))
    code, out, err = _cli(capsys, "max_retrieval", "--heads", "1", *option)
    assert code == 2 and out == "" and err.count("\n") == 1 and err.startswith("infoflow compile: error:"), err


def test_save_and_plot_paths_are_checked_before_any_work(tmp_path, capsys, monkeypatch):
    import os
    keep = tmp_path / "keep.txt"
    keep.write_text("keep me")
    (tmp_path / "link.pt").symlink_to(keep)
    os.mkfifo(tmp_path / "fifo.pt")
    monkeypatch.setattr(ifs, "decide", lambda *args, **kwargs: pytest.fail("decided despite a bad path"))
    for option, says in [(["--save", str(tmp_path / "link.pt")], "symbolic link"),
                         (["--save", str(tmp_path / "fifo.pt")], "not a plain file"),
                         (["--save", str(tmp_path)], "is a folder"),
                         (["--save", str(tmp_path / "no" / "m.pt")], "does not exist"),
                         (["--save", "/dev/full"], "not a plain file"),
                         (["--plot", str(tmp_path / "errors.txt")], ".png, .svg or .pdf"),
                         (["--save", str(tmp_path / "m.png"), "--plot", str(tmp_path / "m.png")], "input file")]:
        if option[-1].endswith("m.png"):
            (tmp_path / "m.png").write_text("")   # the same path twice: the plot would replace the model
        code, _, err = _cli(capsys, "max_retrieval", "--heads", "1", *option)
        assert code == 2 and says in err and err.count("\n") == 1, (option, err)
    assert keep.read_text() == "keep me"


def test_save_and_plot_are_written_whole(tmp_path, capsys):
    code, _, err = _cli(capsys, "max_retrieval", "--heads", "1", "--embed-dim", "8", "--beta", "16", "--seq-len", "8",
                        "--samples", "4", "--save", str(tmp_path / "m.pt"), "--plot", str(tmp_path / "e.svg"))
    assert code == 0, err
    assert (tmp_path / "m.pt").stat().st_size > 0 and (tmp_path / "e.svg").read_bytes().startswith(b"<?xml")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["e.svg", "m.pt"]   # no temporary left beside them
