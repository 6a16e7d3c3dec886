"""The machine being asked about: architectures, the papers' cost laws, and witness programs with their cost.
Imports neither z3 nor torch."""
