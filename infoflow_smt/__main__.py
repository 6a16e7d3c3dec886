"""``python -m infoflow_smt ARGS`` is the ``infoflow`` command (infoflow_smt.cli); with no arguments it runs
the demo (infoflow_smt.demo)."""
from infoflow_smt.cli import entry

if __name__ == "__main__":
    entry()
