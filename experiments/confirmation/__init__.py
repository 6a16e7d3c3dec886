"""Confirmation: one decided case set beside trained networks, judged by its trend over T
(``experiments.confirm``).

``budget`` (the wall time as users write it), ``confirming`` (the decided architecture and its neighbours,
trained at several lengths within the budget), ``trend`` (the judging rule, fixed before training),
``table`` (the agreement table it returns).
"""
