"""Hostile input for the experiments command line, its results store and ``confirm``; signals and workers.

Every bad input must end in one line on stderr, a documented exit code (``experiments/__main__.py``:
2 bad input / unusable store / unwritable path, 130 Ctrl-C, 143 SIGTERM) and no traceback, within a time
bound. Most cases call ``main`` in this process (fast: no torch import per case); a few run the real
command in a subprocess under a memory limit, and the signal tests kill a real ``run --workers 2``.
"""
from __future__ import annotations

import json
import math
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("torch")

from support.paths import ROOT

from experiments.__main__ import main as cli_main
from experiments.tables.run import run_profile
from experiments.tables.store import ResultStore, StoreError, store_path

CASE_SECONDS = 30          # in-process cases: each must answer within this
MEMORY_BYTES = 6 << 30     # subprocess cases: address-space limit (torch maps ~2-3 GB of libraries)


@pytest.fixture(scope="module")
def smoke_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A finished smoke store to copy and damage."""
    results = tmp_path_factory.mktemp("smoke_results")
    run_profile("smoke", results, device="cpu", progress=False, workers=1)
    return Path(store_path(results, "smoke"))


def _run_main(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    start = time.perf_counter()
    code = cli_main(argv)
    assert time.perf_counter() - start < CASE_SECONDS, f"{argv} took too long"
    return code, capsys.readouterr().err


def _assert_one_line(code: int, err: str, expected: int = 2, match: str | None = None) -> None:
    assert code == expected, err
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith(("error:", "interrupted", "terminated")), err
    if match:
        assert match in lines[0], err


# --- bad options ----------------------------------------------------------------------------------

BAD_OPTIONS = [
    (["validate", "--target", "linear_max_sum:D=2", "--heads", "0"], "--heads"),
    (["validate", "--target", "linear_max_sum:D=2", "--heads", "1,0"], "--heads"),
    (["validate", "--target", "linear_max_sum:D=2", "--heads", "a,b"], "--heads"),
    (["validate", "--target", "linear_max_sum:D=2", "--heads", "-1"], "--heads"),
    (["validate", "--target", "linear_max_sum:D=2", "--heads", ""], "--heads"),
    (["validate", "--target", "linear_max_sum:D=2", "--heads", "1", "--seq-len", "1"], "--seq-len"),
    (["validate", "--target", "linear_max_sum:D=2", "--heads", "1", "--seq-len", "0"], "--seq-len"),
    (["validate", "--target", "linear_max_sum:D=2", "--heads", "1", "--seq-len", "x"], "--seq-len"),
    (["validate", "--target", "linear_max_sum:D=2", "--heads", "1", "--embed-dim", "-4"], "--embed-dim"),
    (["validate", "--target", "linear_max_sum:D=2", "--heads", "1", "--embed-dim", "0"], "--embed-dim"),
    (["validate", "--target", "linear_max_sum:D=2", "--heads", "1", "--input-dim", "0"], "--input-dim"),
    (["validate", "--target", "linear_max_sum:D=2", "--heads", "1", "--embed-dim", "1e9x"], "--embed-dim"),
    (["validate", "--target", "linear_max_sum:D=2"], "--target needs --heads"),
    (["validate", "--target", "no_such_target:D=2", "--heads", "1"], "unknown target"),
    (["validate", "--target", "max(x[t] for t in", "--heads", "1"], "unknown target"),
    (["validate", "--target", "__import__('os').system('true')", "--heads", "1"], "unknown target"),
    (["validate", "--target", "intrinsic_dimension:D=0", "--heads", "1"], "unknown target"),
    (["validate", "--target", "linear_max_sum:D=two", "--heads", "1"], "unknown target"),
    (["run", "--threads", "-1"], "--threads"),
    (["run", "--threads", "0"], "--threads"),
    (["run", "--threads", "abc"], "--threads"),
    (["run", "--workers", "0"], "--workers"),
    (["run", "--workers", "-2"], "--workers"),
    (["run", "--label-workers", "0"], "--label-workers"),
    (["run", "--profile", "no_such_profile"], "unknown profile"),
    (["report", "--profile", "no_such_profile"], "unknown profile"),
    (["run", "--bogus-flag"], "unrecognized"),
    ([], "required"),
    (["confirm", "linear_max_sum:D=2", "--heads", "2", "--budget", "0"], "budget"),
    (["confirm", "linear_max_sum:D=2", "--heads", "2", "--budget", "-5"], "budget"),
    (["confirm", "linear_max_sum:D=2", "--heads", "2", "--budget", "nan"], "budget"),
    (["confirm", "linear_max_sum:D=2", "--heads", "2", "--budget", "inf"], "budget"),
    (["confirm", "linear_max_sum:D=2", "--heads", "2", "--budget", "10x"], "budget"),
    (["confirm", "linear_max_sum:D=2", "--heads", "2", "--budget", ""], "budget"),
    (["confirm", "linear_max_sum:D=2", "--heads", "2", "--budget", "1e9h"], "budget"),
    (["confirm", "linear_max_sum:D=2", "--heads", "2", "--threshold", "0"], "--threshold"),
    (["confirm", "linear_max_sum:D=2", "--heads", "2", "--threshold", "nan"], "--threshold"),
    (["confirm", "linear_max_sum:D=2", "--heads", "0"], "--heads"),
    (["confirm", "no_such_target", "--heads", "2"], "unknown target"),
    (["confirm", "linear_max_sum:D=2", "--heads", "2", "--embed-dim", "0"], "--embed-dim"),
    (["confirm", "linear_max_sum:D=2", "--heads", "2", "--seq-len", "1"], "--seq-len"),
    (["confirm", "linear_max_sum:D=2", "--heads", "2", "--seq-len", "8,1"], "--seq-len"),
    (["confirm", "linear_max_sum:D=2", "--heads", "2", "--seq-len", "8,,16"], "--seq-len"),
    (["confirm", "linear_max_sum:D=2", "--heads", "2", "--seq-len", "8,x"], "--seq-len"),
    (["confirm", "linear_max_sum:D=2", "--heads", "2", "--against", "0"], "--against"),
    (["confirm", "linear_max_sum:D=2", "--heads", "2", "--against", "1,a"], "--against"),
    # bounded before anything is allocated (an 80 GB network, 191 GiB of sequences, 100000 threads)
    (["confirm", "linear_max_sum:D=2", "--heads", "2", "--embed-dim", "100000"], "--embed-dim"),
    (["confirm", "linear_max_sum:D=2", "--heads", "2", "--threads", "100000"], "--threads"),
    (["confirm", "linear_max_sum:D=2", "--heads", "2", "--input-dim", "9" * 5000], "--input-dim"),
    (["confirm", "linear_max_sum:D=2", "--heads", "2," * 3000 + "2"], "--heads"),
    (["validate", "--seq-len", "100000000"], "--seq-len"),
    (["run", "--threads", "100000"], "--threads"),
    (["run", "--workers", "100000"], "--workers"),
]


@pytest.mark.parametrize(("argv", "match"), BAD_OPTIONS, ids=[" ".join(a) or "<none>" for a, _ in BAD_OPTIONS])
def test_bad_option_is_one_line_exit_2(argv: list[str], match: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, err = _run_main(argv, capsys)
    _assert_one_line(code, err, 2, match)


def test_cuda_without_a_device_is_bad_input(capsys: pytest.CaptureFixture[str]) -> None:
    import torch

    if torch.cuda.is_available():
        pytest.skip("a CUDA device is present")
    _assert_one_line(*_run_main(["run", "--device", "cuda"], capsys), 2, "no CUDA device")


# --- paths ----------------------------------------------------------------------------------------

def test_results_path_that_is_a_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "file"
    f.write_text("x")
    for argv in (["run", "--results", str(f)], ["report", "--results", str(f)],
                 ["validate", "--results", str(f)]):
        _assert_one_line(*_run_main(argv, capsys), 2, "is a file")


def test_results_under_a_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "file"
    f.write_text("x")
    _assert_one_line(*_run_main(["run", "--quiet", "--results", str(f / "sub")], capsys), 2, "is a file")


def test_missing_results(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _assert_one_line(*_run_main(["report", "--results", str(tmp_path / "none")], capsys), 2, "no results")


@pytest.mark.parametrize("where", ["missing_dir", "under_a_file", "a_directory"])
def test_unwritable_markdown_path(where: str, smoke_store: Path, tmp_path: Path,
                                  capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "file").write_text("x")
    target = {"missing_dir": tmp_path / "file" / "deeper" / "r.md", "under_a_file": tmp_path / "file" / "r.md",
              "a_directory": tmp_path}[where]
    argv = ["report", "--results", str(smoke_store.parent), "--no-plots", "--markdown", str(target)]
    _assert_one_line(*_run_main(argv, capsys), 2, "--markdown")


def test_plots_path_that_is_a_file(smoke_store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "file").write_text("x")
    argv = ["report", "--results", str(smoke_store.parent), "--plots", str(tmp_path / "file")]
    _assert_one_line(*_run_main(argv, capsys), 2, "--plots")


# --- damaged, foreign and malformed stores --------------------------------------------------------

def _copy(smoke_store: Path, tmp_path: Path) -> Path:
    dest = tmp_path / "smoke.sqlite"
    shutil.copy(smoke_store, dest)
    return dest


def _text_file(path: Path) -> None:
    path.write_text("this is not a database\n" * 50)


def _truncated(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2 + 100])


def _header_only(path: Path) -> None:
    path.write_bytes(path.read_bytes()[:100])


def _scribbled(path: Path) -> None:
    data = bytearray(path.read_bytes())
    for i in range(1024, len(data), 97):   # every page past the first: b-tree pages no longer parse
        data[i] = (data[i] * 7 + 13) % 256
    path.write_bytes(bytes(data))


def _foreign(path: Path) -> None:
    path.unlink()
    with sqlite3.connect(path) as con:
        con.execute("CREATE TABLE invoices (id INTEGER, amount REAL)")


def _other_schema(path: Path) -> None:
    path.unlink()
    with sqlite3.connect(path) as con:
        con.execute("CREATE TABLE runs (key TEXT, value TEXT)")


def _update(column: str, value: object) -> object:
    def damage(path: Path) -> None:
        with sqlite3.connect(path) as con:
            con.execute(f"UPDATE runs SET {column} = ? WHERE rowid = 1", (value,))
    return damage


def _a_directory(path: Path) -> None:
    path.unlink()
    path.mkdir()


DAMAGE = {
    "text_file": (_text_file, "not an SQLite database"),
    "truncated": (_truncated, "smoke.sqlite"),
    "header_only": (_header_only, "smoke.sqlite"),
    "scribbled": (_scribbled, "smoke.sqlite"),
    "foreign": (_foreign, "foreign SQLite database"),
    "other_schema": (_other_schema, "another schema"),
    "metrics_not_json": (_update("metrics", "{nmse_best: 0.1"), "malformed"),
    "metrics_not_object": (_update("metrics", "[1, 2]"), "malformed"),
    "metrics_missing_nmse": (_update("metrics", json.dumps({"steps": 3})), "malformed"),
    "metrics_nmse_text": (_update("metrics", json.dumps({"nmse_best": "low"})), "malformed"),
    "heads_not_json": (_update("heads", "2,2"), "malformed"),
    "config_not_json": (_update("config", "{"), "malformed"),
    "seq_len_text": (_update("seq_len", "sixteen"), "malformed"),
    "a_directory": (_a_directory, "is a directory"),
}


_ROW_DAMAGE = ("metrics", "heads", "config", "seq_len")   # run reads only a store's keys; report reads rows
DAMAGE_CASES = [(d, c) for d in DAMAGE for c in ("report", "run") if c == "report" or not d.startswith(_ROW_DAMAGE)]


@pytest.mark.parametrize(("damage", "command"), DAMAGE_CASES, ids=[f"{c}-{d}" for d, c in DAMAGE_CASES])
def test_damaged_store_is_one_line_exit_2(damage: str, command: str, smoke_store: Path, tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    path = _copy(smoke_store, tmp_path)
    hurt, match = DAMAGE[damage]
    hurt(path)
    argv = [command, "--profile", "smoke", "--results", str(tmp_path), "--no-plots" if command == "report"
            else "--quiet"]
    _assert_one_line(*_run_main(argv, capsys), 2, match)


def test_store_error_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "x.sqlite"
    _text_file(path)
    with pytest.raises(StoreError, match=str(path)):
        ResultStore(path)


def test_empty_file_is_a_new_store(tmp_path: Path) -> None:
    path = tmp_path / "x.sqlite"
    path.write_bytes(b"")
    assert ResultStore(path).runs() == []


# --- confirm and the budget, from Python -----------------------------------------------------------

@pytest.mark.parametrize("budget", [0, -1, float("nan"), float("inf"), -float("inf"), "0s", "abc", "", "5 parsecs",
                                    True, None, [60], "1e400"])
def test_bad_budget_is_named(budget: object) -> None:
    import infoflow_smt as ifs
    from experiments.confirmation.budget import parse_budget

    with pytest.raises(ifs.InvalidSpecError, match="budget"):
        parse_budget(budget)


@pytest.mark.parametrize(("text", "seconds"), [(60, 60.0), ("60", 60.0), ("60s", 60.0), ("2m", 120.0),
                                               (" 1.5 min ", 90.0), ("1h", 3600.0), (0.5, 0.5)])
def test_budget_units(text: object, seconds: float) -> None:
    from experiments.confirmation.budget import parse_budget

    assert math.isclose(parse_budget(text), seconds)


@pytest.mark.parametrize("bad", [None, "linear_max_sum:D=2", 42, {"status": "feasible"}])
def test_confirm_refuses_what_is_not_a_verdict(bad: object) -> None:
    import experiments
    import infoflow_smt as ifs

    with pytest.raises(ifs.InvalidSpecError, match="Verdict"):
        experiments.confirm(bad, budget=5)


@pytest.mark.parametrize("budget", [0, -3, float("nan"), float("inf"), "soon"])
def test_confirm_refuses_a_bad_budget(budget: object) -> None:
    import experiments
    import infoflow_smt as ifs

    v = ifs.decide("linear_max_sum:D=2", ifs.Architecture((2,), 16, 2))
    with pytest.raises(ifs.InvalidSpecError, match=r"budget .*" + (str(budget)[:3] if budget != "soon" else "soon")):
        experiments.confirm(v, budget=budget)


@pytest.mark.parametrize(("options", "match"), [
    ({"seq_len": []}, "seq_len"), ({"seq_len": [8, 1]}, "seq_len"), ({"seq_len": "8"}, "seq_len"),
    ({"seq_len": 8.5}, "seq_len"), ({"seq_len": [True, 8]}, "seq_len"), ({"against": [0]}, "against"),
    ({"against": "2"}, "against"), ({"against": [(2, 0)]}, "against"), ({"against": [(2,), 3]}, "against"),
    ({"seq_len": [1], "against": [()]}, "seq_len .* against")])
def test_confirm_refuses_bad_lengths_and_architectures(options: dict, match: str) -> None:
    import experiments
    import infoflow_smt as ifs

    v = ifs.decide("linear_max_sum:D=2", ifs.Architecture((2,), 16, 2))
    with pytest.raises(ifs.InvalidSpecError, match=match):   # before any training: refused at once
        experiments.confirm(v, budget=5, **options)


# --- real processes: exit codes, memory bound, signals, orphans ----------------------------------

# ``python -m experiments ARGS`` under an address-space limit, set by the child itself (no preexec_fn:
# this test process has torch's threads, and forking with threads and then running Python is unsafe).
_BOUNDED = ("import resource, runpy, sys; resource.setrlimit(resource.RLIMIT_AS, ({0}, {0})); "
            "sys.argv[0] = 'experiments'; runpy.run_module('experiments', run_name='__main__', alter_sys=True)")


def _cli(argv: list[str], **kw: object) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-c", _BOUNDED.format(MEMORY_BYTES), *argv], cwd=ROOT, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, **kw)


@pytest.mark.parametrize("argv", [["validate", "--target", "linear_max_sum:D=2", "--heads", "0"],
                                  ["run", "--threads", "-1"]])
def test_real_process_exit_2(argv: list[str]) -> None:
    proc = _cli(argv)
    _, err = proc.communicate(timeout=120)
    _assert_one_line(proc.returncode, err, 2)


def _children(pid: int) -> set[int]:
    """Every live descendant of ``pid`` (by /proc parent links)."""
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if fields[0] != "Z":
                parents[int(entry)] = int(fields[1])
    found, frontier = set(), {pid}
    while frontier:
        frontier = {p for p, pp in parents.items() if pp in frontier} - found
        found |= frontier
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _as_in_a_terminal() -> None:
    """SIGINT's default action, as a process started in a terminal has it: a CI runner may start the suite
    with SIGINT ignored, Python keeps an inherited SIG_IGN, and Ctrl-C would then never arrive."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _start_workers(tmp_path: Path, argv: list[str] | None = None) -> tuple[subprocess.Popen[str], set[int]]:
    """``run --workers 2`` on the cpu profile (long enough to be killed mid-way), or ``argv``, in its own
    session, once its two workers and the resource tracker are up."""
    argv = argv or ["run", "--profile", "cpu", "--results", str(tmp_path), "--workers", "2", "--quiet"]
    proc = _cli(argv, start_new_session=True, preexec_fn=_as_in_a_terminal)
    deadline = time.time() + 90
    kids: set[int] = set()
    while time.time() < deadline and len(kids) < 3:    # 2 workers + the resource tracker
        time.sleep(0.3)
        kids = _children(proc.pid)
        assert proc.poll() is None, proc.communicate()[1]
    assert len(kids) >= 3, f"workers did not start: {kids}"
    time.sleep(1.0)
    return proc, _children(proc.pid)


def _assert_all_gone(pids: set[int], seconds: float = 10) -> None:
    deadline = time.time() + seconds
    while time.time() < deadline and any(_alive(p) for p in pids):
        time.sleep(0.2)
    assert not [p for p in pids if _alive(p)], "processes outlived their parent"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="uses /proc")
def test_sigkill_leaves_no_orphans(tmp_path: Path) -> None:
    proc, kids = _start_workers(tmp_path)
    proc.kill()
    proc.wait(timeout=30)
    _assert_all_gone(kids)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="uses /proc")
@pytest.mark.parametrize(("sig", "code", "word", "group"), [(signal.SIGTERM, 143, "terminated", False),
                                                            (signal.SIGINT, 130, "interrupted", True)])
def test_signal_is_one_line_and_leaves_no_orphans(sig: int, code: int, word: str, group: bool,
                                                  tmp_path: Path) -> None:
    proc, kids = _start_workers(tmp_path)
    if group:                       # Ctrl-C in a terminal signals the whole process group
        os.killpg(proc.pid, sig)
    else:
        proc.send_signal(sig)
    _, err = proc.communicate(timeout=60)
    _assert_one_line(proc.returncode, err, code, word)
    _assert_all_gone(kids)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="uses /proc")
def test_ctrl_c_ends_confirm_and_its_training_processes(tmp_path: Path) -> None:
    proc, kids = _start_workers(tmp_path, ["confirm", "min_pairwise_dot", "--heads", "1,1", "--embed-dim", "8",
                                           "--input-dim", "2", "--seq-len", "4,8", "--budget", "2m",
                                           "--workers", "2", "--seeds", "2"])
    os.killpg(proc.pid, signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    _assert_one_line(proc.returncode, err, 130, "interrupted")
    _assert_all_gone(kids)
