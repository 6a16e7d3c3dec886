"""The README stays true: every command it shows runs and prints what it shows, its Python example runs as
written, its demo runs, and its install and test commands are the ones CI runs.

Console blocks hold ``$ command`` lines followed by the output. In the shown output a line ``...`` stands for
any number of lines and a line ending in `` ...`` for any line starting with what precedes it (timings,
training numbers). After a deliberate change of wording, ``INFOFLOW_UPDATE_README=1 python -m pytest
tests/docs/test_readme.py`` rewrites the outputs of blocks that elide nothing; read the diff before committing.
The PyTorch CPU-index command is not run here (it needs the network); CI runs the quickstart's install.
"""
from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from support.paths import ROOT

README_PATH = ROOT / "README.md"
README = README_PATH.read_text()
CONSOLE = re.compile(r"```console\n(.*?)```", re.DOTALL)


def sessions() -> list[tuple[str, list[str]]]:
    """Every ``$ command`` of the console blocks, with the output shown under it."""
    found = []
    for block in CONSOLE.findall(README):
        for chunk in re.split(r"^\$ ", block, flags=re.MULTILINE)[1:]:
            command, *output = chunk.rstrip("\n").split("\n")
            found.append((command, output))
    return found


def shown_matches(shown: list[str], actual: list[str]) -> bool:
    """``shown`` with its elisions (module docstring) matches ``actual``."""
    if not shown:
        return not actual
    head, rest = shown[0], shown[1:]
    if head == "...":
        return any(shown_matches(rest, actual[i:]) for i in range(len(actual) + 1))
    if not actual:
        return False
    if head.endswith(" ...") and actual[0].startswith(head[:-4]):
        return shown_matches(rest, actual[1:])
    return head == actual[0] and shown_matches(rest, actual[1:])


def shell(command: str, cwd: Path) -> subprocess.CompletedProcess:
    if shutil.which("infoflow") is None:  # not installed as a script (a bare checkout): the same command
        command = re.sub(r"^infoflow\b", shlex.join([sys.executable, "-m", "infoflow_smt"]), command)
    return subprocess.run(command, shell=True, cwd=cwd, capture_output=True, text=True, timeout=600, check=False)


@pytest.mark.parametrize("session", sessions(), ids=[c for c, _ in sessions()])
def test_every_readme_command_prints_what_the_readme_shows(session, tmp_path):
    command, shown = session
    done = shell(command, tmp_path)
    assert done.returncode in (0, 1), done.stderr   # 1: an infeasible answer or a disagreeing training row
    assert "Traceback" not in done.stderr
    actual = done.stdout.rstrip("\n").split("\n")
    if os.environ.get("INFOFLOW_UPDATE_README") and "..." not in "\n".join(shown):
        text = README_PATH.read_text()
        README_PATH.write_text(text.replace("\n".join([f"$ {command}", *shown]),
                                            "\n".join([f"$ {command}", *actual]), 1))
        return
    assert shown_matches(shown, actual), f"$ {command}\n{done.stdout}"
    for picture in re.findall(r"--plot (\S+)", command):
        assert (tmp_path / picture).stat().st_size > 5000


def test_the_pictures_are_the_tour_commands_output():
    for image in ("flow_min_pairwise_dot.png", "phase_intrinsic_dimension_4.png"):
        assert f"(docs/images/{image})" in README and (ROOT / "docs" / "images" / image).exists()


def test_python_example_runs(tmp_path, monkeypatch, capsys):
    block = re.search(r"```python\n(.*?)```", README, re.DOTALL).group(1)
    monkeypatch.chdir(tmp_path)
    exec(compile(block, "README.md", "exec"), {})  # noqa: S102 - the project's own example, not user input
    out = capsys.readouterr().out
    assert "Status.INFEASIBLE T/4 - 1" in out and "True" in out and "FEASIBLE:" in out
    assert (tmp_path / "query.smt2").read_text().strip().endswith("(check-sat)")


def test_demo_prints_both_verdicts():
    result = subprocess.run([sys.executable, "-m", "infoflow_smt"], check=False, capture_output=True, text=True,
                            cwd=ROOT, timeout=300)
    assert result.returncode == 0, result.stderr
    assert "INFEASIBLE:" in result.stdout and "FEASIBLE:" in result.stdout
    assert "replay: ok" in result.stdout


def test_ci_runs_the_readme_install_and_test_commands():
    commands = [c.strip() for c in re.findall(r"```bash\n(.*?)```", README, re.DOTALL)]
    ci = (ROOT / ".ci" / "run").read_text()
    quickstart = next(c for c in commands if c.startswith("python3 -m pip install -e . "))
    test_command = next(c for c in commands if "pytest" in c)
    assert quickstart in ci and test_command in ci


def test_how_it_works_names_every_module_in_its_folder():
    """The README's layer table is the tree: each module of the package is named in the row of its folder."""
    section = README.split("## How it works", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| ") and "infoflow_smt/" in line]
    named = set()
    for row in rows:
        folder = re.search(r"`infoflow_smt/(\w+/)?", row).group(1) or ""
        named |= {folder + name for name in re.findall(r"`(?:infoflow_smt/(?:\w+/)?)?(\w+\.py)`", row)}
    package = ROOT / "infoflow_smt"
    present = {str(path.relative_to(package)) for path in package.rglob("*.py") if path.name != "__init__.py"}
    assert named == present


# ---- Python and the command line ask the same question (docs/api.md, "Defaults") ------------------------------
_OPTIONS = {"--heads": "heads", "--embed-dim": "embed_dim", "--input-dim": "input_dim", "--readout": "readout"}
_SWITCHES = {"--causal": ("causal", True), "--rank-aware": ("rank_aware", True), "--positional": ("positional", True),
             "--no-positional": ("positional", False)}


def _python_architecture(words: list[str]) -> dict:
    """The ``ifs.Architecture`` keywords a Python user writes for the options a README command gives (only
    those: what the command leaves out, the Python call leaves out too)."""
    kwargs = {}
    for i, word in enumerate(words):
        if word in _OPTIONS:
            value = words[i + 1]
            kwargs[_OPTIONS[word]] = (tuple(int(h) for h in value.split(",")) if word == "--heads" else
                                      value if word == "--readout" else int(value))
        elif word in _SWITCHES:
            kwargs[_SWITCHES[word][0]] = _SWITCHES[word][1]
    return kwargs


def _cli_json(argv: list[str], capsys) -> dict:
    from infoflow_smt import cli
    capsys.readouterr()
    cli.main([*argv, "--json"])
    return json.loads(capsys.readouterr().out)


DECISIONS = [shlex.split(c)[1:] for c, _ in sessions() if shlex.split(c)[1] in ("decide", "explain")] + [
    shlex.split("decide intrinsic_dimension:D=3 --heads 3,2 --input-dim 4"),   # the Python example's
    shlex.split("decide min_pairwise_dot --heads 1,1 --embed-dim 16 --input-dim 2"),   # experiment confirm's
    shlex.split("decide max_retrieval --heads 1"),                                  # compile's
]


@pytest.mark.parametrize("argv", DECISIONS, ids=[" ".join(a) for a in DECISIONS])
def test_python_and_the_command_line_give_the_same_verdict(argv, capsys):
    """Every README decision asked from Python with only the options the command gives: the same architecture,
    status and exponent as the command's JSON."""
    command, spec, *words = [w for w in argv if not w.endswith(".png") and w != "--plot"]
    document = _cli_json([command, spec, *words], capsys)
    document = document["verdict"] if command == "explain" else document
    verdict = ifs_decide(spec, _python_architecture(words))
    assert verdict.to_json()["architecture"] == document["architecture"]
    assert (verdict.status.value, str(verdict.exponent)) == (document["status"], document["exponent"])


def ifs_decide(spec: str, kwargs: dict):
    import infoflow_smt as ifs
    return ifs.decide(spec, ifs.Architecture(**kwargs))


def test_python_and_the_command_line_give_the_same_front_and_sweep(capsys):
    import infoflow_smt as ifs
    front = _cli_json(["minimize", "intrinsic_dimension:D=3", "--max-layers", "4", "--max-heads", "3"], capsys)
    python = ifs.minimize("intrinsic_dimension:D=3", max_layers=4, max_heads=3)
    assert [(p["architecture"]["heads"], p["exponent"]) for p in front["points"]] == \
        [(list(v.architecture.heads), str(v.exponent)) for v in python]
    grid = _cli_json(["sweep", "intrinsic_dimension:D=4", "--layers", "1..6", "--heads", "1..8", "--no-cache",
                      "--workers", "1"], capsys)
    cells = ifs.sweep(["intrinsic_dimension:D=4"], [ifs.Architecture(heads=(h,) * L) for L in range(1, 7)
                                                    for h in range(1, 9)], cache=False, workers=1).cells
    assert [(c["heads"], c["input_dim"], c["status"]) for c in grid["cells"]] == \
        [(list(c.architecture.heads), c.architecture.input_dim, c.status.value) for c in cells]
