"""The results store: one SQLite row per finished (configuration, seed) training, committed at once.

A run's key is the SHA-256 of its full configuration (target, target and data seeds, distribution, model
config, training config, training seed), so a rerun finds what is done and an interrupted profile loses
nothing that finished. Everything needed to reproduce or audit a number lives in the row: config, seed,
versions, hardware, wall time, metrics.

>>> import tempfile, os
>>> s = ResultStore(os.path.join(tempfile.mkdtemp(), "x.sqlite"))
>>> s.finished_keys()
set()
"""
from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import time
from contextlib import closing
from dataclasses import dataclass
from typing import Any

from infoflow_smt.errors import InfoflowError

_SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    key        TEXT PRIMARY KEY,  -- sha256 of the canonical JSON of the full config, seed included
    profile    TEXT NOT NULL,
    table_name TEXT NOT NULL,
    target     TEXT NOT NULL,     -- spec as the CLI takes it, or target text
    heads      TEXT NOT NULL,     -- JSON list
    embed_dim  INTEGER NOT NULL,
    seq_len    INTEGER NOT NULL,
    seed       INTEGER NOT NULL,
    config     TEXT NOT NULL,     -- JSON: everything hashed into key
    metrics    TEXT NOT NULL,     -- JSON: RunMetrics fields
    versions   TEXT NOT NULL,     -- JSON: python, torch, numpy, infoflow_smt
    hardware   TEXT NOT NULL,     -- JSON: device, device name, cpu model, cpu count, torch threads
    device     TEXT NOT NULL,
    wall_s     REAL NOT NULL,     -- amortized: wall time of the batched job / models in it
    created    REAL NOT NULL      -- unix time the row was committed
)
"""


def config_key(config: dict[str, Any]) -> str:
    """Stable hash of a JSON-able config (sorted keys, no whitespace)."""
    blob = json.dumps(config, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(blob.encode()).hexdigest()


@dataclass(frozen=True)
class RunRecord:
    key: str
    profile: str
    table_name: str
    target: str
    heads: tuple[int, ...]
    embed_dim: int
    seq_len: int
    seed: int
    config: dict[str, Any]
    metrics: dict[str, Any]
    versions: dict[str, Any]
    hardware: dict[str, Any]
    device: str
    wall_s: float
    created: float = 0.0


class StoreError(InfoflowError):
    """The results store cannot be used: not an SQLite file, corrupt, foreign, unwritable, malformed rows.

    The message names the file and says what to do; the command line reports it in one line (exit 2).
    """


_SQLITE_MAGIC = b"SQLite format 3\x00"
_COLUMNS = ("key", "profile", "table_name", "target", "heads", "embed_dim", "seq_len", "seed", "config",
            "metrics", "versions", "hardware", "device", "wall_s", "created")
_REQUIRED_METRICS = ("nmse_best",)
_ADVICE = "move it away, or pass --results DIR to use another directory"


class ResultStore:
    """SQLite file of RunRecords. Each ``add`` commits immediately (that is what makes resume lossless).

    Opening checks the file: an SQLite database (magic header), intact (``PRAGMA quick_check``), and either
    empty or holding this module's ``runs`` table with its columns. Anything else raises ``StoreError``.
    """

    def __init__(self, path: str | os.PathLike[str]):
        self.path = os.fspath(path)
        _check_location(self.path)
        try:
            with closing(self._connect()) as con, con:
                _check_database(con, self.path)
                con.execute(_SCHEMA)
        except sqlite3.DatabaseError as exc:   # OperationalError (read-only, locked, I/O) included
            raise StoreError(f"results store {self.path}: {exc}; {_ADVICE}") from None

    def _connect(self) -> sqlite3.Connection:
        return sqlite3.connect(self.path, timeout=30)

    def _execute(self, query: str, args: tuple = ()) -> list[tuple]:
        try:
            with closing(self._connect()) as con, con:
                return con.execute(query, args).fetchall()
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"results store {self.path}: {exc}; {_ADVICE}") from None

    def finished_keys(self) -> set[str]:
        return {row[0] for row in self._execute("SELECT key FROM runs")}

    def add(self, record: RunRecord) -> None:
        """Insert (or replace) one run and commit it."""
        row = (record.key, record.profile, record.table_name, record.target, json.dumps(list(record.heads)),
               record.embed_dim, record.seq_len, record.seed, json.dumps(record.config, sort_keys=True),
               json.dumps(record.metrics, sort_keys=True), json.dumps(record.versions, sort_keys=True),
               json.dumps(record.hardware, sort_keys=True), record.device, record.wall_s,
               record.created or time.time())
        self._execute("INSERT OR REPLACE INTO runs VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)", row)

    def runs(self, profile: str | None = None) -> list[RunRecord]:
        """Every stored run (of one profile if given), in insertion order; a malformed row is a StoreError."""
        query: str = "SELECT * FROM runs"
        args: tuple[str, ...] = ()
        if profile is not None:
            query, args = query + " WHERE profile = ?", (profile,)
        return [self._record(r) for r in self._execute(query + " ORDER BY rowid", args)]

    def _record(self, r: tuple) -> RunRecord:
        try:
            record = RunRecord(key=str(r[0]), profile=str(r[1]), table_name=str(r[2]), target=str(r[3]),
                               heads=tuple(int(h) for h in json.loads(r[4])), embed_dim=int(r[5]),
                               seq_len=int(r[6]), seed=int(r[7]), config=_json_dict(r[8]),
                               metrics=_json_dict(r[9]), versions=_json_dict(r[10]),
                               hardware=_json_dict(r[11]), device=str(r[12]), wall_s=float(r[13]),
                               created=float(r[14]))
            for key in _REQUIRED_METRICS:
                float(record.metrics[key])
        except (ValueError, TypeError, KeyError) as exc:   # JSONDecodeError is a ValueError
            raise StoreError(f"results store {self.path}: run {str(r[0])[:12]} has malformed stored data "
                             f"({type(exc).__name__}: {' '.join(str(exc).split())[:80]}); delete that row or "
                             f"the file and rerun the profile") from None
        return record


def _json_dict(text: object) -> dict[str, Any]:
    value = json.loads(text)  # type: ignore[arg-type]
    if not isinstance(value, dict):
        raise TypeError(f"expected a JSON object, got {type(value).__name__}")
    return value


def _check_location(path: str) -> None:
    """The store's directory can exist (or be made) and the path is a file, not a directory."""
    parent = os.path.dirname(os.path.abspath(path))
    try:
        os.makedirs(parent, exist_ok=True)
    except (FileExistsError, NotADirectoryError):
        raise StoreError(f"results directory {parent} is a file, not a directory; pass --results DIR "
                         "naming a directory") from None
    except OSError as exc:
        raise StoreError(f"cannot create results directory {parent}: {exc.strerror}; pass --results DIR "
                         "naming a writable directory") from None
    if os.path.isdir(path):
        raise StoreError(f"results store {path} is a directory; {_ADVICE}")
    if os.path.exists(path) and os.path.getsize(path) > 0:
        try:
            with open(path, "rb") as fh:
                head = fh.read(len(_SQLITE_MAGIC))
        except OSError as exc:
            raise StoreError(f"cannot read results store {path}: {exc.strerror}; {_ADVICE}") from None
        if head != _SQLITE_MAGIC:
            raise StoreError(f"results store {path} is not an SQLite database (foreign or corrupt file); "
                             f"{_ADVICE}")


def _check_database(con: sqlite3.Connection, path: str) -> None:
    """Intact, and either empty or holding our ``runs`` table with our columns."""
    check = con.execute("PRAGMA quick_check").fetchone()
    if not check or check[0] != "ok":
        raise StoreError(f"results store {path} is corrupt (quick_check: {check[0] if check else 'no answer'}); "
                         f"{_ADVICE}")
    tables = [row[0] for row in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
    if not tables:
        return
    if "runs" not in tables:
        raise StoreError(f"results store {path} is a foreign SQLite database (tables: "
                         f"{', '.join(sorted(tables))[:80]}); {_ADVICE}")
    columns = tuple(row[1] for row in con.execute("PRAGMA table_info(runs)"))
    if columns != _COLUMNS:
        raise StoreError(f"results store {path} has a runs table of another schema (columns: "
                         f"{', '.join(columns)[:80]}); {_ADVICE}")


def store_path(results_dir: str | os.PathLike[str], profile: str) -> str:
    """``<results_dir>/<profile>.sqlite``."""
    return os.path.join(os.fspath(results_dir), f"{profile}.sqlite")
