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


class ResultStore:
    """SQLite file of RunRecords. Each ``add`` commits immediately (that is what makes resume lossless)."""

    def __init__(self, path: str | os.PathLike[str]):
        self.path = os.fspath(path)
        os.makedirs(os.path.dirname(os.path.abspath(self.path)), exist_ok=True)
        with closing(self._connect()) as con, con:
            con.execute(_SCHEMA)

    def _connect(self) -> sqlite3.Connection:
        return sqlite3.connect(self.path, timeout=30)

    def finished_keys(self) -> set[str]:
        with closing(self._connect()) as con:
            return {row[0] for row in con.execute("SELECT key FROM runs")}

    def add(self, record: RunRecord) -> None:
        """Insert (or replace) one run and commit it."""
        row = (record.key, record.profile, record.table_name, record.target, json.dumps(list(record.heads)),
               record.embed_dim, record.seq_len, record.seed, json.dumps(record.config, sort_keys=True),
               json.dumps(record.metrics, sort_keys=True), json.dumps(record.versions, sort_keys=True),
               json.dumps(record.hardware, sort_keys=True), record.device, record.wall_s,
               record.created or time.time())
        with closing(self._connect()) as con, con:  # the inner ``con`` commits on leaving
            con.execute("INSERT OR REPLACE INTO runs VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)", row)

    def runs(self, profile: str | None = None) -> list[RunRecord]:
        """Every stored run (of one profile if given), in insertion order."""
        query: str = "SELECT * FROM runs"
        args: tuple[str, ...] = ()
        if profile is not None:
            query, args = query + " WHERE profile = ?", (profile,)
        with closing(self._connect()) as con:
            rows = con.execute(query + " ORDER BY rowid", args).fetchall()
        return [RunRecord(key=r[0], profile=r[1], table_name=r[2], target=r[3], heads=tuple(json.loads(r[4])),
                          embed_dim=r[5], seq_len=r[6], seed=r[7], config=json.loads(r[8]),
                          metrics=json.loads(r[9]), versions=json.loads(r[10]), hardware=json.loads(r[11]),
                          device=r[12], wall_s=r[13], created=r[14]) for r in rows]


def store_path(results_dir: str | os.PathLike[str], profile: str) -> str:
    """``<results_dir>/<profile>.sqlite``."""
    return os.path.join(os.fspath(results_dir), f"{profile}.sqlite")
