"""The settings a question takes from its target where the architecture leaves them out: one rule for the command
line and for Python (``settled``; docs/api.md, "Defaults").

* ``input_dim``: the target's token dimension (``Target.token_dim``): 1 where a selection compares tokens
  themselves (they must be numbers), else 2, the least in which tokens are vectors.
* ``readout``: where the paper of the target's catalogue entry reads the answer (``catalogue.Entry.readout``:
  ``hop_k`` at the last position), else the extra output token (paper 1).
* ``positional``: on exactly when the question tells positions apart (fixed positions, offsets, subsets, ranges):
  read at the last position without positions, ``x[T]`` is the reader's own token (``readout.last_token_target``);
  under the mask a range up to a variable (``range(1, s+1)``) is told apart by the mask itself.

>>> from infoflow_smt.lang.catalogue import parse_spec
>>> settings(parse_spec("min_pairwise_dot"))
{'input_dim': 2, 'readout': 'output', 'positional': False}
>>> settings(parse_spec("max(F0(x[T], x[t]) for t in T)"), readout="last")
{'input_dim': 2, 'readout': 'last', 'positional': False}
"""
from __future__ import annotations

import dataclasses

from infoflow_smt.lang.catalogue import stated_readout
from infoflow_smt.lang.trees import needs_positional
from infoflow_smt.model.architecture import LAST, UNSET, Architecture
from infoflow_smt.model.readout import last_token_target


def settings(target, *, causal: bool = False, input_dim: int | None = None, readout: str | None = None,
             positional: bool | None = None) -> dict[str, object]:
    """``input_dim``, ``readout`` and ``positional`` for ``target``: each as given, or the target's (module
    docstring). ``causal``: whether the question is asked under the mask (it changes what tells positions
    apart)."""
    input_dim = target.token_dim if input_dim is None else input_dim
    readout = stated_readout(target) if readout is None else readout
    if positional is None:
        positional = _positional(target, causal, readout)
    return {"input_dim": input_dim, "readout": readout, "positional": positional}


def settled(arch: Architecture, target) -> Architecture:
    """``arch`` with what it leaves out (``Architecture.unset``) taken from ``target`` (``settings``): what
    ``decide``, ``export_smtlib``, ``sweep`` and the claims ask, and what the command line builds.

    >>> from infoflow_smt.lang.catalogue import parse_spec
    >>> str(settled(Architecture(heads=(1, 1)), parse_spec("induction_head")))
    'heads=(1, 1), E=32, d=2, positional'
    >>> settled(Architecture(heads=(1, 1, 1)), parse_spec("hop_k")).readout
    'last'
    """
    if not arch.unset:
        return arch
    given = {name: getattr(arch, name) for name, _ in UNSET if name not in arch.unset}
    return dataclasses.replace(arch, **settings(target, causal=arch.causal, **given))


def _positional(target, causal: bool, readout: str) -> bool:
    if readout == LAST:   # x[T] is then the reader's own token: no position needed for it
        return bool(last_token_target(target).needs_positional)
    return bool(needs_positional(target, causal))
