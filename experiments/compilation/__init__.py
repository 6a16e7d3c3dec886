"""Compilation: a feasible witness written as a softmax transformer with explicit weights
(``experiments.compile``), and its NMSE over beta and T (``experiments.check_compiled``).

``compiling`` calls the steps in order, witness -> plan -> layout -> weights -> check: ``witness`` (the
program, checked against its architecture), ``facts``, ``plan``, ``head_plan``, ``parts``, ``routes`` and
``factors`` (no torch: what every position holds, each head's scores split into products, with ``separable``'s
sums of products for a function of two tokens), ``layout`` (no torch: the slots of the residual stream), ``weights``,
``exact_maps``, ``values``, ``gathers`` and ``mlp_maps`` (the transformer and its position-wise maps), ``check``
(NMSE against ``Target.evaluate``); ``command`` is ``infoflow compile``, ``figure`` draws the attention maps
beside the witness (docs/compile.md).
"""
