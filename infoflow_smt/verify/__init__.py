"""The checkers, which share no code with the encoder: the reference interpreter, the batched replay of a
witness, and the brute-force enumeration of programs. Imports neither z3 nor torch."""
