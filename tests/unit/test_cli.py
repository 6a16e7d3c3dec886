"""The ``infoflow`` command as a user meets it: exit codes, one-line errors, JSON that validates against the
documented schema (docs/cli.md), human output fixed by golden files, pictures, interrupted sweeps.

Golden files live in tests/golden/; after a deliberate change of wording, rewrite them with
``INFOFLOW_UPDATE_GOLDEN=1 python -m pytest tests/unit/test_cli.py`` and read the diff before committing.
"""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time

import jsonschema
import pytest
from support.paths import GOLDEN, ROOT

from infoflow_smt import cli


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def schema_for(name: str) -> dict:
    text = (ROOT / "docs" / "cli.md").read_text()
    block = re.search(r"<!-- schema -->\s*```json\n(.*?)```", text, re.DOTALL)
    assert block, "docs/cli.md must hold the JSON schema after <!-- schema -->"
    schema = json.loads(block.group(1))
    jsonschema.Draft202012Validator.check_schema(schema)
    return {**schema, "$ref": f"#/$defs/{name}"}


def validate(document, name: str) -> None:
    jsonschema.Draft202012Validator(schema_for(name)).validate(document)


# ---- what the issue asks, word for word ----------------------------------------------------------------------
def test_one_layer_is_infeasible_with_its_explanation(capsys):
    code, out, _ = run(capsys, "decide", "min_pairwise_dot", "--heads", "4", "--embed-dim", "32", "--input-dim", "2")
    assert code == 1
    assert out.startswith("INFEASIBLE") and "why:" in out and "chain of 2 dependent selections" in out


def test_two_layers_are_feasible_with_their_witness(capsys):
    code, out, _ = run(capsys, "decide", "min_pairwise_dot", "--heads", "1,1", "--embed-dim", "32",
                       "--input-dim", "2")
    assert code == 0
    assert out.startswith("FEASIBLE") and "witness, replayed" in out and "layer 2, head 1, at the output" in out


def test_unknown_exits_3_never_1(capsys):
    code, out, _ = run(capsys, "decide", "intrinsic_dimension:D=8", "--heads", "7,8", "--timeout", "0.001")
    assert code in (1, 3)  # a machine fast enough may finish; a timeout must never read as infeasible
    if code == 3:
        assert out.startswith("UNKNOWN")


# ---- bad input: one line, exit 2 -----------------------------------------------------------------------------
BAD = {
    "malformed target": ["decide", "max(f1(x[t]) for t in T", "--heads", "1"],
    "zero heads": ["decide", "min_pairwise_dot", "--heads", "0"],
    "letters for heads": ["decide", "min_pairwise_dot", "--heads", "a,b"],
    "negative width": ["decide", "min_pairwise_dot", "--heads", "2", "--embed-dim", "-3"],
    "width that shrinks": ["decide", "min_pairwise_dot", "--heads", "2", "--embed-dim", "-T"],
    "width with a call": ["decide", "min_pairwise_dot", "--heads", "2", "--embed-dim", "__import__('os')"],
    "unknown catalogue name": ["decide", "min_pairwise_dott", "--heads", "2"],
    "bad catalogue parameter": ["decide", "intrinsic_dimension:D=x", "--heads", "2"],
    "hostile text": ["decide", "(" * 5000 + "x[t]" + ")" * 5000, "--heads", "1"],
    "control characters": ["decide", "max(f1(x[t]) for t in T)\x1b[31m\n", "--heads", "1"],
    "missing heads": ["decide", "min_pairwise_dot"],
    "missing target": ["decide"],
    "unknown command": ["decid", "min_pairwise_dot"],
    "unknown option": ["decide", "min_pairwise_dot", "--heads", "1", "--frobnicate"],
    "negative timeout": ["decide", "min_pairwise_dot", "--heads", "1", "--timeout", "-1"],
    "infinite timeout": ["decide", "min_pairwise_dot", "--heads", "1", "--timeout", "inf"],
    "zero input dimension": ["decide", "min_pairwise_dot", "--heads", "1", "--input-dim", "0"],
    "plot to a folder that is missing": ["decide", "min_pairwise_dot", "--heads", "1", "--plot", "/no/such/a.png"],
    "plot to a text file": ["decide", "min_pairwise_dot", "--heads", "1", "--plot", "flow.txt"],
    "too many layers": ["decide", "min_pairwise_dot", "--heads", ",".join(["1"] * 70)],
    "bad range": ["sweep", "min_pairwise_dot", "--layers", "3..1"],
    "cache and no cache": ["sweep", "min_pairwise_dot", "--cache", "c.jsonl", "--no-cache"],
    "unknown backend": ["sweep", "min_pairwise_dot", "--backend", "spark"],
    "zero cell timeout": ["sweep", "min_pairwise_dot", "--cell-timeout", "0"],
    "negative cell timeout": ["sweep", "min_pairwise_dot", "--cell-timeout", "-1"],
    "letters for a cell timeout": ["sweep", "min_pairwise_dot", "--cell-timeout", "abc"],
    "nan cell timeout": ["sweep", "min_pairwise_dot", "--cell-timeout", "nan"],
    "zero max heads": ["minimize", "min_pairwise_dot", "--max-heads", "0"],
    "unknown catalogue entry": ["catalogue", "no_such_target"],
    "unknown proof": ["prove", "no_such_proof"],
    "vector tokens read as numbers": ["decide", "max(x[t] for t in T)", "--heads", "1", "--input-dim", "3"],
}


@pytest.mark.parametrize("argv", BAD.values(), ids=BAD.keys())
def test_bad_input_is_one_line_and_exit_2(capsys, argv):
    code, out, err = run(capsys, *argv)
    assert code == 2
    assert out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err and "\x1b" not in err, err
    assert len(lines[0]) < 700


def test_export_refuses_to_overwrite_and_names_the_option(capsys, tmp_path):
    path = tmp_path / "q.smt2"
    code, out, _ = run(capsys, "export-smtlib", "min_pairwise_dot", "--heads", "1,1", "--output", str(path))
    assert code == 0 and path.read_text().startswith("(") and str(path) in out
    code, _, err = run(capsys, "export-smtlib", "min_pairwise_dot", "--heads", "1,1", "--output", str(path))
    assert code == 2 and "--overwrite" in err
    code, _, _ = run(capsys, "export-smtlib", "min_pairwise_dot", "--heads", "1,1", "--output", str(path),
                     "--overwrite")
    assert code == 0


# ---- JSON against the documented schema ---------------------------------------------------------------------
JSON_CASES = {
    "decide feasible": ("decide", ["decide", "min_pairwise_dot", "--heads", "1,1", "--json"], 0),
    "decide infeasible": ("decide", ["decide", "min_pairwise_dot", "--heads", "4", "--json"], 1),
    "decide at one length": ("decide", ["decide", "specific_positions", "--heads", "1", "--seq-len", "16",
                                        "--json"], 0),
    "explain": ("explain", ["explain", "intrinsic_dimension:D=3", "--heads", "3,2", "--json"], 1),
    "minimize": ("minimize", ["minimize", "min_pairwise_dot", "--max-layers", "2", "--max-heads", "2",
                              "--json"], 0),
    "minimize none": ("minimize", ["minimize", "kth_largest:k=2", "--max-layers", "2", "--max-heads", "2",
                                   "--json"], 1),
    "frontier": ("frontier", ["frontier", "intrinsic_dimension:D=2", "--json"], 0),
    "sweep": ("sweep", ["sweep", "min_pairwise_dot", "max_retrieval", "--layers", "1..2", "--heads", "1..2",
                        "--no-cache", "--workers", "1", "--json"], 0),
    "sweep causal": ("sweep", ["sweep", "min_pairwise_dot", "linear_max_sum:D=4", "--layers", "1..2", "--heads",
                               "1..2", "--causal", "--no-cache", "--workers", "1", "--json"], 0),   # every cell decided
    "minimize causal": ("minimize", ["minimize", "min(bilinear(A1, x[s], x[t]) for s in T for t in T)",
                                     "--max-layers", "2", "--max-heads", "2", "--causal", "--json"], 0),
    "frontier causal": ("frontier", ["frontier", "min_pairwise_dot", "--causal", "--json"], 0),
    "catalogue": ("catalogue", ["catalogue", "--json"], 0),
    "catalogue entry": ("catalogue", ["catalogue", "kth_largest", "--json"], 0),
    "prove": ("prove", ["prove", "depth_separation", "--json"], 0),
}


@pytest.mark.parametrize("case", JSON_CASES.values(), ids=JSON_CASES.keys())
def test_json_output_validates_against_its_schema(capsys, case):
    name, argv, expected = case
    code, out, err = run(capsys, *argv)
    assert code == expected, err
    validate(json.loads(out), name)   # exactly one document: json.loads refuses anything after it


def test_explain_lists_the_inner_hop_of_an_induction_head_first(capsys):
    target = "f1(x[argmax(dot(x[t], x[argmax(dot(x[u], x[T]) for u in T)]) for t in T)])"
    code, out, _ = run(capsys, "explain", target, "--heads", "1", "--json")
    selections = json.loads(out)["selections"]
    assert code == 1 and len(selections) == 2
    assert selections[0].startswith("the argmax over u of") and selections[1].startswith("the argmax over t of")
    code, out, _ = run(capsys, "explain", target, "--heads", "1")
    listing = out.split("selections, innermost first:\n")[1].splitlines()[:2]
    assert [line.strip()[:26] for line in listing] == ["- p1: the argmax over u of", "- p2: the argmax over t of"]
    assert out.startswith("target: f1(x[p2])\n")   # a selection whose winner another reads is named (p1, p2)


def test_the_schema_rejects_what_it_should():
    with pytest.raises(jsonschema.ValidationError):
        validate({"status": "maybe"}, "decide")


# ---- human output: golden files ------------------------------------------------------------------------------
GOLDEN_CASES = {
    "decide_infeasible": ["decide", "min_pairwise_dot", "--heads", "4", "--embed-dim", "32", "--input-dim", "2"],
    "decide_feasible": ["decide", "min_pairwise_dot", "--heads", "1,1", "--embed-dim", "32", "--input-dim", "2"],
    "decide_positions": ["decide", "specific_positions", "--heads", "1"],
    "explain_intrinsic_dimension": ["explain", "intrinsic_dimension:D=3", "--heads", "3,2"],
    "minimize": ["minimize", "intrinsic_dimension:D=3", "--max-layers", "4", "--max-heads", "3"],
    "minimize_none": ["minimize", "kth_largest:k=2", "--max-layers", "2", "--max-heads", "2"],
    "frontier": ["frontier", "intrinsic_dimension:D=3"],
    "sweep_intrinsic_dimension_4": ["sweep", "intrinsic_dimension:D=4", "--layers", "1..6", "--heads", "1..8",
                                    "--no-cache", "--workers", "1"],
    "catalogue": ["catalogue"],
}


@pytest.mark.parametrize("name", GOLDEN_CASES)
def test_human_output_matches_its_golden_file(capsys, name):
    code, out, err = run(capsys, *GOLDEN_CASES[name])
    assert code in (0, 1), err
    path = GOLDEN / f"{name}.txt"
    if os.environ.get("INFOFLOW_UPDATE_GOLDEN"):
        path.write_text(out)
    assert out == path.read_text(), f"{name}: rewrite with INFOFLOW_UPDATE_GOLDEN=1 if the change is meant"


def test_no_golden_file_is_orphaned():
    assert {p.stem for p in GOLDEN.glob("*.txt")} == set(GOLDEN_CASES)


# ---- pictures ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("suffix, magic", [(".png", b"\x89PNG"), (".svg", b"<?xml")])
def test_decide_plot_writes_the_diagram(capsys, tmp_path, suffix, magic):
    for heads, expected in (("1,1", 0), ("4", 1)):
        path = tmp_path / f"flow-{heads.replace(',', '-')}{suffix}"
        code, out, _ = run(capsys, "decide", "min_pairwise_dot", "--heads", heads, "--plot", str(path))
        assert code == expected and f"diagram: {path}" in out
        assert path.read_bytes().startswith(magic) and path.stat().st_size > 5000


def test_sweep_plot_writes_one_phase_diagram_per_target(capsys, tmp_path):
    path = tmp_path / "phase.png"
    code, out, _ = run(capsys, "sweep", "min_pairwise_dot", "max_retrieval", "--layers", "1..2", "--heads", "1..2",
                       "--no-cache", "--workers", "1", "--plot", str(path))
    assert code == 0 and f"phase diagram: {path}" in out
    assert path.exists() and (tmp_path / "phase-2.png").exists()


# ---- sweeps: resumable ---------------------------------------------------------------------------------------
def test_a_sweep_run_again_decides_nothing_twice(capsys, tmp_path):
    cache = tmp_path / "cache.jsonl"
    argv = ["sweep", "intrinsic_dimension:D=3", "linear_max_sum:D=3", "--layers", "1..3", "--heads", "1..3",
            "--cache", str(cache), "--workers", "1", "--json"]
    code, out, _ = run(capsys, *argv)
    first = json.loads(out)
    assert code == 0 and first["decided"] > 0 and first["cached"] == 0
    code, out, _ = run(capsys, *argv)
    second = json.loads(out)
    assert code == 0 and second["decided"] == 0 and second["cached"] == first["decided"]

    def verdicts(document):
        return [(c["target"], c["heads"], c["status"], c["exponent"]) for c in document["cells"]]
    assert verdicts(first) == verdicts(second)


def _command(*argv: str) -> list[str]:
    return [sys.executable, "-m", "infoflow_smt", *argv]


@pytest.mark.slow
def test_ctrl_c_is_one_line_exit_130_and_keeps_the_cache(tmp_path):
    cache = tmp_path / "cache.jsonl"
    argv = _command("sweep", "intrinsic_dimension:D=8", "linear_max_sum:D=8", "--layers", "1..8", "--heads",
                    "1..8", "--no-infer", "--workers", "2", "--cache", str(cache))
    # its own process group with SIGINT's default action, as a terminal would start it (a CI runner may
    # start the suite with SIGINT ignored, and Python keeps an inherited SIG_IGN)
    process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               start_new_session=True,
                               preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))  # noqa: PLW1509 - no thread runs here
    deadline = time.time() + 60
    while time.time() < deadline and not (cache.exists() and cache.stat().st_size):
        time.sleep(0.2)   # interrupt once some cells are decided (and cached)
    os.killpg(process.pid, signal.SIGINT)
    out, err = process.communicate(timeout=60)
    assert process.returncode == 130, (out, err)
    assert err.strip().count("\n") == 0 and "Traceback" not in err and "interrupted" in err
    kept = [json.loads(line) for line in cache.read_text().splitlines()]
    assert kept and all(record["status"] in ("feasible", "infeasible") for record in kept)
    survivors = ["?"]
    for _ in range(50):   # the workers and multiprocessing's resource tracker end within seconds
        survivors = subprocess.run(["pgrep", "-a", "-g", str(process.pid)], check=False, capture_output=True,
                                   text=True).stdout.splitlines()
        if not survivors:
            break
        time.sleep(0.2)
    assert survivors == [], f"outlived the interrupted sweep: {survivors}"


# ---- the command itself ---------------------------------------------------------------------------------------
def test_python_dash_m_is_the_same_command():
    done = subprocess.run(_command("decide", "min_pairwise_dot", "--heads", "4"), check=False, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 1 and done.stdout.startswith("INFEASIBLE")
    done = subprocess.run(_command("decide", "max(f1(x[t]) for t in T", "--heads", "1"), check=False,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "Traceback" not in done.stderr


DELEGATED_USAGE = {   # the command typed -> what its usage line or error must start with
    "experiment --help": ("infoflow experiment", 0, "usage: infoflow experiment [-h] {run,validate,report,confirm}"),
    "experiment confirm --help": ("infoflow experiment confirm", 0, "usage: infoflow experiment confirm [-h]"),
    "compile --help": ("infoflow compile", 0, "usage: infoflow compile [-h]"),
    "prove nonexistent": ("infoflow prove", 2, "infoflow prove: error: invalid proof name"),
}


@pytest.mark.parametrize("typed", DELEGATED_USAGE)
def test_a_delegated_command_names_itself_as_typed(typed):
    """``infoflow experiment``, ``compile`` and ``prove`` have their own parsers: what they print names the
    command the user ran, never ``python -m experiments`` or ``python -m proofs``."""
    if typed.split()[0] in ("experiment", "compile"):
        pytest.importorskip("torch")
    _, code, start = DELEGATED_USAGE[typed]
    done = subprocess.run(_command(*typed.split()), check=False, capture_output=True, text=True, timeout=180)
    shown = done.stdout + done.stderr
    assert done.returncode == code and shown.startswith(start), shown
    assert "python -m" not in shown.split("\n\n")[0], shown    # the usage block (or the one-line error)


def test_the_console_script_is_declared():
    text = (ROOT / "pyproject.toml").read_text()
    assert 'infoflow = "infoflow_smt.cli:entry"' in text and callable(cli.entry)


def test_help_lists_every_command(capsys):
    with pytest.raises(SystemExit) as exit_:
        cli.build_parser().parse_args(["--help"])
    assert exit_.value.code == 0
    out = capsys.readouterr().out
    for command in ("decide", "explain", "minimize", "frontier", "sweep", "catalogue", "export-smtlib", "prove",
                    "experiment"):
        assert command in out


def test_a_public_function_is_not_shadowed_by_its_module():
    import importlib

    import infoflow_smt as ifs
    importlib.import_module("infoflow_smt.explore.sweeps")
    importlib.import_module("infoflow_smt.smt.solver")
    assert callable(ifs.sweep) and callable(ifs.decide) and callable(ifs.minimize) and callable(ifs.decide_all)


# ---- decide --train (the experiments extra) ------------------------------------------------------------------
def test_train_sets_trained_networks_beside_the_verdict(capsys):
    pytest.importorskip("torch")
    text = "max(f1(x[t]) + dot(a1, x[t]) for t in T)"   # no catalogue entry has this target
    code, out, err = run(capsys, "decide", text, "--heads", "1", "--embed-dim", "16", "--seq-len", "8",
                         "--train", "--budget", "4s", "--json")
    document = json.loads(out)
    validate(document, "decide")
    assert code == 0 and document["status"] == "feasible" and err == ""
    training = document["training"]
    assert training["budget_s"] == 4 and training["rows"][0]["role"] == "decided"


def test_a_bad_training_budget_is_refused_before_the_solver_runs(capsys):
    pytest.importorskip("torch")
    code, out, err = run(capsys, "decide", "min_pairwise_dot", "--heads", "1,1", "--train", "--budget", "0s")
    assert code == 2 and out == "" and "budget" in err and err.count("\n") == 1


# ---- tables for papers: --format, and whole tables in files -------------------------------------------------
SIXTEEN = ("sweep", "intrinsic_dimension:D=4", "--layers", "1..2", "--heads", "1..16", "--no-cache")


def test_a_sixteen_head_sweep_written_to_a_file_is_whole(tmp_path):
    out = tmp_path / "table.txt"
    with out.open("w") as stream:
        done = subprocess.run(_command(*SIXTEEN), check=False, stdout=stream, stderr=subprocess.PIPE, text=True,
                              env={**os.environ, "COLUMNS": "80"}, timeout=300)
    assert done.returncode == 0, done.stderr
    lines = out.read_text().splitlines()
    rows = [line.split() for line in lines if line[:1] in ("1", "2")]
    assert "..." not in out.read_text() and "…" not in out.read_text()
    assert [r[0] for r in rows] == ["1", "2"] and all(sum(t.startswith(("no", "yes")) for t in r) == 16 for r in rows)
    assert lines[1].split()[-1] == "16"


def test_sweep_csv_is_one_row_per_cell(capsys):
    import csv
    import io
    code, out, err = run(capsys, *SIXTEEN[:5], "1..3", "--no-cache", "--format", "csv")
    rows = list(csv.DictReader(io.StringIO(out)))
    assert code == 0 and len(rows) == 6 and "cells:" in err
    assert {(r["layers"], r["heads per layer"]) for r in rows} == {(str(L), str(h)) for L in (1, 2) for h in (1, 2, 3)}
    assert {r["verdict"] for r in rows} <= {"feasible", "infeasible", "unknown"}


def test_minimize_markdown_and_latex_hold_the_table_alone(capsys):
    argv = ("minimize", "intrinsic_dimension:D=3", "--max-layers", "3", "--max-heads", "3")
    code, markdown, err = run(capsys, *argv, "--format", "markdown")
    assert code == 0 and err.startswith("target: ")
    body = [line for line in markdown.splitlines() if line.startswith("|")]
    assert body[0] == "| layers | heads per layer | exponent | operations |" and body[1] == "|---|---|---|---|"
    assert [line.split(" | ")[:2] for line in body[2:]] == [["| 2", "3"], ["| 3", "2"]]
    code, latex, _ = run(capsys, *argv, "--format", "latex")
    assert latex.splitlines()[1] == r"\begin{tabular}{llll}" and latex.rstrip().endswith(r"\end{tabular}")
    assert r"2 & 3 & 1 & 6 \\" in latex.splitlines()


def test_frontier_csv_lists_its_minimal_architectures(capsys):
    import csv
    import io
    code, out, _ = run(capsys, "frontier", "intrinsic_dimension:D=3", "--format", "csv")
    rows = list(csv.reader(io.StringIO(out)))
    assert code == 0 and rows[0] == ["layers", "heads per layer", "exponent", "operations"]
    assert [r[:2] for r in rows[1:]] == [["2", "3"], ["3", "2"], ["4", "1"]]


def test_format_and_json_do_not_go_together(capsys):
    code, _, err = run(capsys, "minimize", "intrinsic_dimension:D=3", "--json", "--format", "csv")
    assert code == 2 and "--json or --format" in err


def test_export_smtlib_past_its_timeout_exits_3_and_writes_nothing(capsys, tmp_path) -> None:
    text = " + ".join(f"max(f{i}(x[t]) for t in S{i})" for i in range(1, 9))
    out_file = tmp_path / "q.smt2"
    code, out, err = run(capsys, "export-smtlib", text, "--heads", "2,2,2,2,2,2", "--input-dim", "2", "--positional",
                         "--output", str(out_file), "--timeout", "0.05")
    assert code == 3 and out == "" and not out_file.exists()
    assert len(err.strip().splitlines()) == 1 and "deadline passed during encoding" in err


def test_readout_last_decides_the_question_read_at_position_T(capsys):
    code, out, _ = run(capsys, "decide", "max(F0(x[T], x[t]) for t in T)", "--heads", "1", "--readout", "last",
                       "--json")
    document = json.loads(out)
    validate(document, "decide")
    assert code == 0 and document["architecture"]["readout"] == "last" and document["per_position"]
    assert not document["architecture"]["positional"]  # x[T] is the reader's own token: no position needed
    code, out, _ = run(capsys, "decide", "max(F0(x[T], x[t]) for t in T)", "--heads", "1", "--readout", "last")
    assert code == 0 and "answer read at the last position T" in out
    code, out, _ = run(capsys, "decide", "max(F0(x[T], x[t]) for t in T)", "--heads", "1", "--readout", "last",
                       "--positional")
    assert code == 0 and "at input position T: retrieves" in out
    code, _, err = run(capsys, "decide", "x[o]", "--heads", "1", "--readout", "last", "--positional")
    assert code == 2 and "not supported yet" in err and len(err.strip().splitlines()) == 1


def test_a_sweep_over_targets_of_several_token_dimensions_shares_one_deadline(monkeypatch, capsys):
    """Targets that read tokens as numbers and as vectors are two sweeps (one per token dimension): each was
    given the whole --timeout, so two of them took twice the deadline; then the first was given all that was
    left, so it could starve the second. Each gets its share of what is left, by its targets."""
    from infoflow_smt.explore import sweeps
    given, real = [], sweeps.sweep

    def recording(*args, timeout, **kwargs):
        given.append(timeout)
        time.sleep(0.3)
        return real(*args, timeout=timeout, **kwargs)
    monkeypatch.setattr(sweeps, "sweep", recording)
    code, _, _ = run(capsys, "sweep", "max(x[t] for t in T)", "min_pairwise_dot", "--layers", "1", "--heads", "1",
                     "--no-cache", "--workers", "1", "--timeout", "20")
    assert code == 0 and len(given) == 2 and given[0] <= 20 / 2 and given[1] <= 20 - 0.3


def test_an_unknown_sweep_cell_names_the_seconds_it_had_and_the_option_that_gives_more(capsys):
    """32 subset selections on two layers with positions take more than half a second (unknown at 5 s on the
    2-core machine); one layer answers at once, and max_retrieval after it is still decided (issue 39)."""
    hard = " + ".join(f"min(f{i}(x[t]) for t in S{i})" for i in range(1, 33))
    argv = ["sweep", hard, "max_retrieval", "--layers", "1..2", "--heads", "2", "--positional", "--no-cache",
            "--workers", "1", "--cell-timeout", "0.5"]
    code, out, _ = run(capsys, *argv, "--json")
    document = json.loads(out)
    validate(document, "sweep")
    unknown = [c for c in document["cells"] if c["status"] == "unknown"]
    assert code == 3 and [c["heads"] for c in unknown] == [[2, 2]] and unknown[0]["allowed_seconds"] == 0.5
    assert all(c["status"] == "feasible" for c in document["cells"] if c["target"] == "max_retrieval")
    code, out, _ = run(capsys, *argv)
    assert code == 3 and "?(0.5s)" in out and "--cell-timeout SECONDS above 0.5" in out
