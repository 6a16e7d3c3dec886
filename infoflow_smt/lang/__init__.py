"""The target language: text to syntax tree and back, the normal form (one spelling per function), the numeric
meaning of a target, its comparison tree, and the catalogue of named targets. Imports neither z3 nor torch."""
