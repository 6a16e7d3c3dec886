"""The README stays true: its Python example runs as written, its demo runs, its commands are CI's."""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()


def test_python_example_runs(tmp_path, monkeypatch, capsys):
    block = re.search(r"```python\n(.*?)```", README, re.DOTALL).group(1)
    monkeypatch.chdir(tmp_path)
    exec(compile(block, "README.md", "exec"), {})  # noqa: S102 - the project's own example, not user input
    out = capsys.readouterr().out
    assert "Status.INFEASIBLE T/8 - 1" in out and "True" in out
    assert (tmp_path / "query.smt2").read_text().strip().endswith("(check-sat)")


def test_demo_prints_both_verdicts():
    result = subprocess.run([sys.executable, "-m", "infoflow_smt"], check=False, capture_output=True, text=True, cwd=ROOT,
                            timeout=300)
    assert result.returncode == 0, result.stderr
    assert "INFEASIBLE:" in result.stdout and "FEASIBLE:" in result.stdout
    assert "replay: ok" in result.stdout


def test_ci_runs_the_readme_test_command():
    commands = re.findall(r"```bash\n(.*?)```", README, re.DOTALL)
    test_command = next(c.strip() for c in commands if "pytest" in c)
    assert test_command in (ROOT / ".ci" / "run").read_text()
