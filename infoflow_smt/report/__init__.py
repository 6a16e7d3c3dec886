"""What a reader sees: verdicts, the explanations of infeasible answers, and pictures. Imports neither z3 nor
torch (matplotlib is loaded only by the plotting functions)."""
