"""The acceptance of a program the search found: confirmed on fresh inputs, then made as short as it can be.

A program reached the answer on the search's few inputs; it is accepted only if it passes ``flows.check`` on
``samples`` fresh inputs at each length (a third of them at each spread of ``flows.SPREADS``). The first input
it fails on is raised as a ``Counterexample``, which the search takes among its inputs before it starts again.
An accepted program is then stripped of every head, and every gathered position, it passes without (each trial
on ``TRIAL_SAMPLES`` inputs per length, the result confirmed in full), so that it reads as the shortest program
of its kind.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from infoflow_smt.lang.target import Target
from infoflow_smt.model.architecture import Architecture
from infoflow_smt.verify import flows
from infoflow_smt.verify.flow_program import FlowProgram, Mode, program

TRIAL_SAMPLES = 16   # inputs per length for each head the minimization tries to drop


class Counterexample(Exception):
    """The input a program that reached the answer on the search inputs fails on."""

    def __init__(self, X: np.ndarray):
        super().__init__("a program reached the answer on the search inputs and failed on another")
        self.X = X


@dataclass(frozen=True)
class Acceptance:
    """A program that reached the answer on the search inputs: confirmed on fresh inputs (or the first input it
    fails on is raised as a counterexample), then stripped of what it passes without."""

    target: Target
    arch: Architecture
    lengths: tuple[int, ...]
    samples: int
    seed: int
    minimize: bool

    def __call__(self, candidate: FlowProgram) -> FlowProgram:
        checked = self._check(candidate, self.samples)
        if not checked.passed:
            raise Counterexample(checked.counterexample)
        if not self.minimize:
            return candidate
        smaller = _minimized(candidate, lambda p: self._check(p, min(TRIAL_SAMPLES, self.samples)).passed)
        return smaller if smaller == candidate or self._check(smaller, self.samples).passed else candidate

    def _check(self, candidate: FlowProgram, samples: int) -> flows.FlowCheck:
        return flows.check(candidate, self.target, self.arch, seq_lens=self.lengths, samples=samples,
                           seed=self.seed + 1)


def _minimized(found: FlowProgram, passes) -> FlowProgram:
    """``found`` without the heads, and the gathered positions, it ``passes`` without."""
    layers = [dict(layer) for layer in found.layers]
    for layer in layers:
        for place in list(layer):
            for head in list(layer[place]):
                kept = layer[place]
                layer[place] = tuple(h for h in kept if h is not head)
                if passes(program(*layers)):
                    continue
                layer[place] = kept
                if head.mode is Mode.GATHER:
                    for source in head.sources:
                        smaller = dataclasses.replace(head, sources=tuple(s for s in head.sources if s != source))
                        if not smaller.sources:
                            continue
                        layer[place] = tuple(smaller if h is head else h for h in layer[place])
                        if passes(program(*layers)):
                            head = smaller
                        else:
                            layer[place] = tuple(head if h is smaller else h for h in layer[place])
    return program(*layers)
