"""Where things are, for tests at any depth of tests/."""
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
ROOT = TESTS.parent          # the repository
GOLDEN = TESTS / "golden"    # user-visible output, regenerated only on purpose
SUPPORT = TESTS / "support"
