"""Experiments: train real transformers on the solver's targets and compare with its verdicts.

The only part of the project that imports torch. One concern per module, in pipeline order:

* ``data``     seeded inputs with the papers' distributions, labels from ``Target.evaluate``
* ``model``    the papers' transformer, as a batch of models sharing one forward pass
* ``train``    AdamW + cosine, many configurations in one batched job, validation NMSE
* ``profiles`` smoke / cpu / paper: tables of target, T, architectures, settings
* ``store``    SQLite record of every run (config, seed, versions, hardware, metrics), resumable
* ``run``      plans a profile's jobs, skips finished runs, trains the rest (worker processes)
* ``validate`` ``ifs.decide`` versus trained NMSE: the agreement table
* ``report``   tables, JSON, transition checks and plots beside ``paper_figures``

Command line: ``python -m experiments run|validate|report --profile smoke|cpu|paper``.
"""
