"""Hostile inputs (tests/support/hostile_cases.py): every one gives its documented error class, or a bounded answer,
within its time bound, in a process whose memory is limited; decisions from many threads at once give the
answers they give one at a time; and the command line keeps its promises under hostile probes, each in its own
process (the quick ones here; benchmarks/hostile_cli.py runs them all and prints the count kept)."""
from __future__ import annotations

import json
import resource
import subprocess
import sys
import threading

import pytest
from support.hostile_cases import CASES, COMMAND_LINE, TEXTS
from support.hostile_probe import line_of, run, scratch
from support.paths import ROOT, SUPPORT, TESTS

import infoflow_smt as ifs

MEMORY = 4 * 1024**3   # bytes of address space the worker may map
ALARM = 60             # seconds one case may take before it counts as hung


def _limit() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY, MEMORY))


@pytest.fixture(scope="module")
def outcomes() -> dict[str, dict]:
    run = subprocess.run([sys.executable, str(SUPPORT / "hostile_worker.py"), str(TESTS), str(ALARM)],
                         capture_output=True, text=True, preexec_fn=_limit, timeout=1800, check=False)
    found = {}
    for line in run.stdout.splitlines():
        if line.startswith("{"):
            record = json.loads(line)
            found[record["id"]] = record
    assert found, run.stderr[-2000:]
    return found


def test_there_are_many_hostile_inputs():
    assert len(CASES) >= 150 and len({c[0] for c in CASES}) == len(CASES)


@pytest.mark.parametrize("case_id, code, expected", CASES, ids=[c[0] for c in CASES])
def test_hostile_input(case_id, code, expected, outcomes):
    record = outcomes.get(case_id)
    assert record is not None, f"{case_id} never reported: the worker died on or before it"
    assert record["outcome"] == expected, f"{code}\n-> {record}"
    bound = 30 if expected == "ok" else 10
    assert record["seconds"] < bound, record


# ---- each refusal for the reason its name gives -------------------------------------------------------------
SYNTAX = {"open-call", "open-index", "parens-only", "close-paren", "unclosed-generator"}   # named for their brackets


def _balanced(text: str) -> bool:
    """Every bracket closed by its own kind, in order."""
    open_ = []
    for char in text:
        if char in "([":
            open_.append(char)
        elif char in ")]" and (not open_ or open_.pop() != "([)]"[")]".index(char)]):
            return False
    return not open_


@pytest.mark.parametrize("name, code", [t for t in TEXTS if t[0] not in SYNTAX], ids=[t[0] for t in TEXTS
                                                                                   if t[0] not in SYNTAX])
def test_only_the_syntax_cases_have_unbalanced_brackets(name, code):
    """A case named for a limit or a construct must not be refused for an unmatched parenthesis instead."""
    text = eval(code, {"T": ifs.T})   # the project's own test cases
    assert not isinstance(text, str) or _balanced(text), f"{name}: {text[:120]!r}"


REASONS = {   # case -> what its refusal must say
    "text-nesting-33": "nest more than 32 deep", "text-nesting-33-chain": "nest more than 32 deep",
    "text-nesting-33-dependent": "nest more than 32 deep", "decide-too-costly-to-check": "MAX_REPLAY_WORK",
    "decide-nesting-12-chain-too-costly": "MAX_REPLAY_WORK",
}


@pytest.mark.parametrize("case_id", REASONS)
def test_a_refusal_says_the_reason_its_case_is_named_for(case_id, tmp_path):
    code = next(c for i, c, _ in CASES if i == case_id)
    with pytest.raises(ifs.InvalidSpecError, match=REASONS[case_id]):
        exec(code, {"ifs": ifs, "T": ifs.T, "tmp": str(tmp_path)})  # noqa: S102 - the project's own test cases


CONCURRENT = ["min_pairwise_dot", "intrinsic_dimension:D=3", "triangle_center", "d_retrieval:D=3",
              "kth_largest:k=2", "linear_max_sum:D=3", "specific_positions", "max(x[t] for t in T) + min(x[t] for t in T)"]


def _arch(spec: str) -> ifs.Architecture:
    target = ifs.catalogue.parse_spec(spec)
    d = 1 if target.reads_tokens_as_numbers else 2
    return ifs.Architecture(heads=(2, 3), embed_dim=32, input_dim=d, positional=target.needs_positional)


def test_decisions_from_eight_threads_agree_with_one_at_a_time():
    alone = {spec: ifs.decide(spec, _arch(spec)) for spec in CONCURRENT}
    together, errors = {}, []

    def work(spec: str) -> None:
        try:
            for _ in range(2):
                together[spec] = ifs.decide(spec, _arch(spec))
        except Exception as err:  # noqa: BLE001 - any error from a thread is the finding
            errors.append(f"{spec}: {type(err).__name__}: {err}")

    threads = [threading.Thread(target=work, args=(spec,)) for spec in CONCURRENT]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert not errors and len(together) == len(CONCURRENT)
    for spec in CONCURRENT:
        assert (together[spec].status, together[spec].exponent) == (alone[spec].status, alone[spec].exponent)


# ---- the command line ----------------------------------------------------------------------------------------------
QUICK = [p for p in COMMAND_LINE if p.quick]


def test_there_are_many_command_line_probes():
    names = [p.name for p in COMMAND_LINE]
    assert len(names) >= 100 and len(set(names)) == len(names) and len(QUICK) >= 20


@pytest.mark.parametrize("probe", QUICK, ids=[p.name for p in QUICK])
def test_the_command_line_keeps_its_promises(probe, tmp_path):
    if "compile" in probe.line or "experiments" in probe.line:
        pytest.importorskip("torch")
    scratch(tmp_path)
    outcome = run(probe, tmp_path, ROOT)
    assert outcome.kept, line_of(outcome)
