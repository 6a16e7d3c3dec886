"""infoflow_smt.files: paths checked before work starts, files written whole or not at all."""
from __future__ import annotations

import os
import stat

import pytest

import infoflow_smt as ifs
from infoflow_smt.files import as_path, input_file, output_file, plain_file, replacing, write_atomic


@pytest.mark.parametrize("bad", [None, 0, True, "", "   ", 3.5])
def test_what_is_not_a_path_is_refused(bad):
    with pytest.raises(ifs.InvalidSpecError, match="path must be a file name"):
        as_path(bad, "export")


def test_a_plain_file_or_a_new_name_in_a_folder_passes(tmp_path):
    existing = tmp_path / "a.txt"
    existing.write_text("x")
    assert plain_file(existing, "export") == existing
    assert plain_file(tmp_path / "new.txt", "export") == tmp_path / "new.txt"


def test_folders_fifos_devices_and_missing_folders_are_refused(tmp_path):
    with pytest.raises(ifs.InvalidSpecError, match="is a folder"):
        plain_file(tmp_path, "cache")
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    with pytest.raises(ifs.InvalidSpecError, match="not a plain file"):
        plain_file(fifo, "cache")
    with pytest.raises(ifs.InvalidSpecError, match="not a plain file"):
        plain_file("/dev/zero", "cache")
    with pytest.raises(ifs.InvalidSpecError, match="does not exist"):
        plain_file(tmp_path / "missing" / "x.txt", "plot")
    under_a_file = tmp_path / "a.txt"
    under_a_file.write_text("x")
    with pytest.raises(ifs.InvalidSpecError, match="does not exist"):
        plain_file(under_a_file / "x.txt", "plot")


def test_an_atomic_write_keeps_the_mode_of_the_file_it_replaces(tmp_path):
    path = tmp_path / "script.smt2"
    path.write_text("old")
    path.chmod(0o640)
    write_atomic(path, "new", "export")
    assert path.read_text() == "new"
    assert stat.S_IMODE(path.stat().st_mode) == 0o640
    assert [p.name for p in tmp_path.iterdir()] == ["script.smt2"]   # no temporary file left


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path):
    path = tmp_path / "table.txt"
    path.write_text("old")
    with pytest.raises(RuntimeError), replacing(path, "export") as temporary:
        temporary.write_text("half")
        raise RuntimeError("interrupted")
    assert path.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["table.txt"]


def test_a_file_to_write_whole_is_neither_a_link_nor_an_input(tmp_path):
    """Writing through a link replaced a file the user did not name; writing over the input lost it."""
    target = tmp_path / "elsewhere.txt"
    target.write_text("keep me")
    link = tmp_path / "report.xml"
    link.symlink_to(target)
    with pytest.raises(ifs.InvalidSpecError, match="is a symbolic link"):
        output_file(link, "--junit-xml")
    dangling = tmp_path / "dangling.xml"
    dangling.symlink_to(tmp_path / "none")
    with pytest.raises(ifs.InvalidSpecError, match="is a symbolic link"):
        output_file(dangling, "--junit-xml")
    claims = tmp_path / "claims.toml"
    claims.write_text("[[claim]]")
    with pytest.raises(ifs.InvalidSpecError, match="is the input file"):
        output_file(claims, "--junit-xml", inputs=[claims])
    hard = tmp_path / "hard.toml"
    os.link(claims, hard)
    with pytest.raises(ifs.InvalidSpecError, match="is the input file"):
        output_file(hard, "--junit-xml", inputs=[str(claims)])
    assert output_file(tmp_path / "new.xml", "--junit-xml", inputs=[claims, None]) == tmp_path / "new.xml"
    assert target.read_text() == "keep me" and claims.read_text() == "[[claim]]"


def test_a_file_to_read_whole_is_a_plain_file_of_bounded_size(tmp_path):
    small = tmp_path / "claims.toml"
    small.write_text("x = 1\n")
    assert input_file(small, "claims file", 100) == small
    link = tmp_path / "link.toml"
    link.symlink_to(small)
    assert input_file(link, "claims file", 100) == link   # reading through a link replaces nothing
    fifo = tmp_path / "fifo.toml"
    os.mkfifo(fifo)
    for path, says in [(fifo, "not a plain file"), ("/dev/zero", "not a plain file"), (tmp_path, "is a folder"),
                       (tmp_path / "missing.toml", "cannot read"), (small, "6 bytes, over the limit of 5")]:
        with pytest.raises(ifs.InvalidSpecError, match=says):
            input_file(path, "claims file", 5 if path == small else 100)
