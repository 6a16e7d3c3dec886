"""Tables: the papers' experiments as profiles, trained, stored, reported and set beside the solver.

In pipeline order: ``profiles`` (smoke / cpu / ... / paper: tables of target, T, architectures, recipes and
the checks they must pass), ``run`` (plans a profile's jobs, trains the unfinished ones), ``store`` (SQLite,
one row per run), ``summary`` (the table, JSON, Markdown and checks of ``python -m experiments report``),
``figures`` and ``papers`` (plots beside the papers' reported figures), ``validation`` (``ifs.decide``
against trained NMSE), ``probes`` (what a trained network retrieves, head by head); ``gpu_run.sh`` runs the
paper profile on one GPU.
"""
