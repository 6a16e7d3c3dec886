"""Claims files for the tests of the claims checker, the `infoflow check` command and the pytest plugin."""

# a true claim, a false one (two ways: verdict and exponent), an unknown one (a hard question, a tiny deadline)
TRUE = """
[[claim]]
name = "two layers suffice"
target = "min_pairwise_dot"
heads = [1, 1]
embed_dim = 16
expect = "feasible"
exponent = "1"
"""
FALSE = """
[[claim]]
name = "one layer suffices"
target = "min_pairwise_dot"
heads = [1]
embed_dim = 16
expect = "feasible"
exponent = "bounded"
"""
UNKNOWN = """
[[claim]]
name = "the triangle center, too hard to decide in a millisecond"
target = "triangle_center"
heads = [8, 8, 8]
embed_dim = 64
expect = "infeasible"
timeout = 0.001
"""

MIXED = TRUE + FALSE + UNKNOWN

# the decoder setting stated in the file (causal, readout, rank_aware, seq_len), each claim false without it
DECODER = """
[[claim]]
name = "a decoder cannot see the partners after it"
target = "match2"
heads = [1]
causal = true
expect = "infeasible"
exponent = "oo"

[[claim]]
name = "read at the last position, one layer"
target = "max(F0(x[T], x[t]) for t in T)"
heads = [1]
readout = "last"
expect = "feasible"

[[claim]]
name = "a head narrower than its score's rank"
target = "max(dot(x[T], x[t]) for t in T)"
heads = [1, 1]
embed_dim = 4
input_dim = 8
rank_aware = true
expect = "infeasible"

[[claim]]
name = "at T = 8 the aggregation costs nothing"
target = "min_pairwise_dot"
heads = [1]
seq_len = 8
expect = "infeasible"
exponent = "0"
"""
