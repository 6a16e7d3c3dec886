"""Shared test set-up: a test that patches the model's internals leaves no answer behind.

``decide`` keeps the questions of recent targets (encodings, replays, minimized witnesses) and targets are
parsed once per text: both are caches of answers the unpatched code gives. A test that patches a cost law,
the encoder or the replay (``monkeypatch``) would otherwise hand its patched answers to the tests after it
(the mutation tests once made the kth_retrieval proof fail, in the full suite only).
"""
from __future__ import annotations

from collections.abc import Iterator

import pytest

from infoflow_smt.lang import catalogue
from infoflow_smt.smt import solver


def _forget() -> None:
    solver.forget_recent()
    catalogue._parsed.cache_clear()


@pytest.fixture(autouse=True)
def _patched_answers_stay_in_their_test(request: pytest.FixtureRequest) -> Iterator[None]:
    patched = "monkeypatch" in request.fixturenames
    if patched:
        _forget()
    yield
    if patched:
        _forget()
