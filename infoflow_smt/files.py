"""Paths the user names (a sweep's cache, an exported script, a picture, a report, a claims file): checked
before any work starts, written atomically.

A path is refused, with one line naming it, when it is not a path at all, when its folder is missing or not
writable, when it is a folder, or when it names something other than a plain file (a FIFO would block the
reader, ``/dev/zero`` would be read until memory runs out, a device would be replaced by a regular file).
A file to write whole (``output_file``) is also refused when it is a symbolic link (writing through it would
replace a file the user did not name) or one of the command's own inputs; a file to read (``input_file``) when
it is larger than the reader takes. A file is written whole or not at all: a temporary file beside it, then
renamed over it, keeping the mode of the file it replaces.
"""
from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from pathlib import Path

from infoflow_smt.errors import InvalidSpecError


def as_path(path, what: str) -> Path:
    """``path`` (a str or ``os.PathLike``) as a ``Path``; anything else is refused."""
    if isinstance(path, bool) or not isinstance(path, (str, os.PathLike)) or not str(path).strip():
        raise InvalidSpecError(f"the {what} path must be a file name (str or os.PathLike), got {path!r}", what)
    return Path(path)


def plain_file(path, what: str, *, writable: bool = True) -> Path:
    """``path`` if it is a plain file or nothing yet, in an existing (writable) folder; else InvalidSpecError."""
    path = as_path(path, what)
    if path.is_dir():
        raise InvalidSpecError(f"{path} is a folder; give a file path", what)
    if os.path.lexists(path):
        mode = os.lstat(path).st_mode
        if not (stat.S_ISREG(mode) or stat.S_ISLNK(mode)):
            raise InvalidSpecError(f"{path} is not a plain file (a FIFO, device or socket): give a file path", what)
        if stat.S_ISLNK(mode) and os.path.exists(path) and not stat.S_ISREG(os.stat(path).st_mode):
            raise InvalidSpecError(f"{path} links to something that is not a plain file", what)
    folder = path.parent
    if not folder.is_dir():
        raise InvalidSpecError(f"{path}: the folder {folder} does not exist (or is a file)", what)
    if writable and not os.access(folder, os.W_OK | os.X_OK):
        raise InvalidSpecError(f"{path}: the folder {folder} is not writable", what)
    return path


def output_file(path, what: str, *, inputs=()) -> Path:
    """``path`` to be written whole: ``plain_file``, and neither a symbolic link nor the same file as one of
    ``inputs`` (the files the command reads); else InvalidSpecError."""
    path = plain_file(path, what)
    if os.path.islink(path):
        raise InvalidSpecError(f"{path} is a symbolic link (to {os.readlink(path)}): give the path of the file "
                               "itself; nothing is written through a link", what)
    for source in inputs:
        if source is not None and os.path.exists(path) and os.path.exists(source) and os.path.samefile(path, source):
            raise InvalidSpecError(f"{path} is the input file {source}: give another path to write", what)
    return path


def input_file(path, what: str, most_bytes: int) -> Path:
    """``path`` to be read whole: an existing plain file (a link to one is fine) of at most ``most_bytes``
    bytes that this process may read; else InvalidSpecError. A FIFO or a device is refused unopened."""
    path = as_path(path, what)
    try:
        status = os.stat(path)
    except OSError as err:
        raise InvalidSpecError(f"cannot read {path}: {err.strerror or err}", what) from None
    if stat.S_ISDIR(status.st_mode):
        raise InvalidSpecError(f"{path} is a folder; give a file", what)
    if not stat.S_ISREG(status.st_mode):
        raise InvalidSpecError(f"{path} is not a plain file (a FIFO, device or socket): give a file", what)
    if status.st_size > most_bytes:
        raise InvalidSpecError(f"{path} holds {status.st_size} bytes, over the limit of {most_bytes}", what)
    if not os.access(path, os.R_OK):
        raise InvalidSpecError(f"cannot read {path}: permission denied", what)
    return path


@contextlib.contextmanager
def replacing(path: Path, what: str):
    """A temporary file beside ``path`` to write (a context manager yielding its ``Path``), renamed over
    ``path`` when the block ends without error, with the mode of the file it replaces (a new file gets the
    mode the umask allows). A full disk or a file size limit is reported as InvalidSpecError naming the
    path; the temporary file is always removed."""
    try:
        mode = stat.S_IMODE(os.stat(path).st_mode)
    except FileNotFoundError:
        umask = os.umask(0)
        os.umask(umask)
        mode = 0o666 & ~umask
    handle, name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=path.suffix)
    os.close(handle)
    temporary = Path(name)
    try:
        yield temporary
        os.chmod(temporary, mode)
        os.replace(temporary, path)
    except OSError as err:
        raise InvalidSpecError(f"could not write {path}: {err.strerror or err}", what) from None
    finally:
        temporary.unlink(missing_ok=True)


def write_atomic(path: Path, text: str, what: str) -> Path:
    """Write ``text`` to ``path`` whole or not at all (``replacing``)."""
    with replacing(path, what) as temporary, open(temporary, "w", encoding="utf-8") as out:
        out.write(text)
        out.flush()
        os.fsync(out.fileno())
    return path
