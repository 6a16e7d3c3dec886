"""Shared test set-up: a test that patches the model's internals leaves no answer behind, and the suite runs
with Ctrl-C as a terminal delivers it.

``decide`` keeps the questions of recent targets (encodings, replays, minimized witnesses) and targets are
parsed once per text: both are caches of answers the unpatched code gives. A test that patches a cost law,
the encoder or the replay (``monkeypatch``) would otherwise hand its patched answers to the tests after it
(the mutation tests once made the kth_retrieval proof fail, in the full suite only).
"""
from __future__ import annotations

import signal
import threading
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


def pytest_configure(config: pytest.Config) -> None:
    """A shell's background job (``pytest ... &`` without job control) and some CI runners start the suite with
    SIGINT ignored, and Python keeps an inherited SIG_IGN: the tests of Ctrl-C could not deliver one, and
    ``deadline.interrupts_remembered`` would leave a remembered signal to every later test of the process.
    The suite runs as a terminal starts Python (each xdist worker configures itself too)."""
    if threading.current_thread() is threading.main_thread() and signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
