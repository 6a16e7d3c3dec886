"""Compilation: a feasible witness written as a softmax transformer with explicit weights
(``experiments.compile``), and its NMSE over beta and T (``experiments.check_compiled``).

``plan`` (no torch: where each fact lives in the residual stream, what each head reads), ``separable``
(no torch: a function of two tokens as a sum of products), ``weights`` (the transformer and its maps),
``mlp_maps`` (``ffn="mlp"``: the maps as fitted MLPs), ``check`` (NMSE against ``Target.evaluate``),
``command`` (``infoflow compile``), ``figure`` (the attention maps beside the witness, docs/compile.md).
"""
