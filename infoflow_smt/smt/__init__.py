"""The SMT layer, the only code that imports z3: the encoder (target and architecture to constraints) and the
solver (decide, minimize, export), whose every answer is replayed by the checkers."""
