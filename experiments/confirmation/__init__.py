"""Confirmation: one decided case set beside trained networks, judged by its trend over T
(``experiments.confirm``).

``confirming`` calls the steps in order: ``neighbours`` (the decided architecture and its neighbours, each
decided by the solver), ``schedule`` (no torch: the budget shared out, ``budget`` reads it as users write
it), ``run`` (every row trained at every length in worker processes), then each row judged by ``trend`` (the
rule, fixed before training) into ``table`` (the agreement table returned).
"""
