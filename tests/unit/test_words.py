"""infoflow_smt.words: the words every layer's messages share."""
from __future__ import annotations

import pytest

from infoflow_smt.words import plural


@pytest.mark.parametrize(("count", "word", "text"), [
    (1, "head", "1 head"), (2, "head", "2 heads"), (0, "layer", "0 layers"), (-1, "layer", "-1 layers"),
])
def test_plural_adds_an_s_unless_the_count_is_one(count, word, text):
    assert plural(count, word) == text


def test_words_imports_nothing_of_the_package():
    """The lowest layer (the parser) uses it, so it may not import anything above it."""
    import ast
    import inspect

    from infoflow_smt import words

    tree = ast.parse(inspect.getsource(words))
    imported = [node for node in ast.walk(tree) if isinstance(node, (ast.Import, ast.ImportFrom))]
    assert all(getattr(node, "module", None) == "__future__" for node in imported)
