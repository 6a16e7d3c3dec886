"""The pytest plugin (entry point ``pytest11``: ``infoflow_claims``): claims files as test files.

pytest collects every file whose name matches the ``infoflow_claims`` ini patterns (default ``claims_*.toml``)
and every ``.toml`` file named on the command line; each claim is one test item. A claim that holds passes; a
false one fails with what was claimed, what the prover says and the verdict in words (witness or reasons); an
unknown one (the prover ran out of time) is skipped with a reason that starts with ``unknown:``, never passed
(``-ra`` lists it; ``infoflow check`` exits 3 on it). A bad file is a collection error naming every bad key; a
bad ``infoflow_claims_timeout`` is one usage error when pytest starts, before any test runs.
"""
from __future__ import annotations

import fnmatch
from pathlib import Path

import pytest

from infoflow_smt.claim_check import ClaimResult, Outcome, check
from infoflow_smt.claims import Claim, load
from infoflow_smt.command import SECONDS
from infoflow_smt.errors import InvalidSpecError
from infoflow_smt.words import printable

PATTERNS = "infoflow_claims"
TIMEOUT = "infoflow_claims_timeout"
_SECONDS = pytest.StashKey[float]()   # the ini timeout, read once


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addini(PATTERNS, type="args", default=["claims_*.toml"],
                  help="glob patterns of infoflow_smt claims files to collect (default claims_*.toml)")
    parser.addini(TIMEOUT, default="60",
                  help="seconds the prover has for each claim that sets no timeout of its own (default 60)")


def pytest_configure(config: pytest.Config) -> None:
    text = str(config.getini(TIMEOUT))
    try:
        config.stash[_SECONDS] = SECONDS.value(text)
    except ValueError as err:
        raise pytest.UsageError(f"{TIMEOUT} = {printable(text, 40)} in the ini file: {err}") from None


def pytest_collect_file(file_path: Path, parent: pytest.Collector):
    named = parent.session.isinitpath(file_path) and file_path.suffix == ".toml"
    if named or any(fnmatch.fnmatch(file_path.name, p) for p in parent.config.getini(PATTERNS)):
        return ClaimsFile.from_parent(parent, path=file_path)
    return None


class BadClaimsFile(Exception):
    """A claims file that does not read: reported as one collection error, without a traceback."""


class ClaimFalse(Exception):
    """The prover contradicts a claim: the message is the readable report."""


class ClaimsFile(pytest.File):
    def collect(self):
        try:
            claims = load(self.path)
        except InvalidSpecError as err:
            raise BadClaimsFile("\n".join(str(p) for p in err.problems)) from None
        for claim in claims:
            yield ClaimItem.from_parent(self, name=printable(claim.name, None), claim=claim)

    def repr_failure(self, excinfo, style=None):
        if isinstance(excinfo.value, BadClaimsFile):
            return f"bad claims file {self.path}:\n{excinfo.value}"
        return super().repr_failure(excinfo)


class ClaimItem(pytest.Item):
    def __init__(self, *, claim: Claim, **kwargs):
        super().__init__(**kwargs)
        self.claim = claim
        self.result: ClaimResult | None = None

    def runtest(self) -> None:
        self.result = check(self.claim, self.config.stash[_SECONDS])
        if self.result.outcome is Outcome.UNKNOWN:
            pytest.skip(f"unknown: {printable(self.result.found)} (claimed: {self.claim})")
        if self.result.outcome is Outcome.FALSE:
            raise ClaimFalse(str(self.result))

    def repr_failure(self, excinfo, style=None):
        if isinstance(excinfo.value, ClaimFalse):
            return str(excinfo.value)
        return super().repr_failure(excinfo)

    def reportinfo(self):
        return self.path, None, f"claim: {self.name}"
