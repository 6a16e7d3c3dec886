"""docs/tutorial.ipynb runs as written: every cell executes without an error, in a fresh kernel started in a
folder of its own (a reader may open it from anywhere), and the answers display themselves as HTML with their
pictures inline."""
from __future__ import annotations

import nbclient
import nbformat
import pytest
from support.paths import ROOT

NOTEBOOK = ROOT / "docs" / "tutorial.ipynb"


@pytest.fixture(scope="module")
def executed(tmp_path_factory):
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    # a cell that raises stops the run with CellExecutionError, which names the cell and shows its traceback;
    # the kernel starts in an empty folder: no file of the repository is where the notebook looks
    folder = tmp_path_factory.mktemp("anywhere")
    nbclient.NotebookClient(notebook, timeout=300, kernel_name="python3",
                            resources={"metadata": {"path": str(folder)}}).execute()
    return notebook


def test_the_notebook_is_stored_without_outputs():
    """Outputs are made by running it (here, and by a reader); stored ones would go stale unseen."""
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    nbformat.validate(notebook)
    assert all(not cell.get("outputs") and cell.get("execution_count") is None
               for cell in notebook.cells if cell.cell_type == "code")


def test_every_cell_runs_and_the_answers_show_as_html(executed):
    outputs = [o for cell in executed.cells if cell.cell_type == "code" for o in cell.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    pages = [o["data"]["text/html"] for o in outputs if "text/html" in o.get("data", {})]
    assert sum("data:image/png;base64," in page for page in pages) >= 5   # 4 verdicts, a sweep
    assert any(">INFEASIBLE</b>" in page for page in pages) and any(">FEASIBLE</b>" in page for page in pages)
    assert any("efficient exactly from" in page for page in pages)   # the frontier
    assert any("2 hold, 0 false, 0 unknown" in page for page in pages)   # the claims file
    assert any("where <code>p1 = argmax(" in page for page in pages)      # a chain, by its names


def test_the_notebook_walks_the_readme_tour():
    source = "\n".join(cell.source for cell in nbformat.read(NOTEBOOK, as_version=4).cells)
    for step in ("ifs.decide(", "ifs.parse_target(", "ifs.minimize(", "ifs.sweep(", "ifs.decide_all(", "ifs.check(",
                 "check_file(", "infoflow prove", "infoflow experiment"):
        assert step in source, step
