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
