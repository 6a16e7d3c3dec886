"""Committed results survive the code: every committed profile reports from its store (``results/*.sqlite``),
its report is the committed one, and docs/reproduction.md quotes what the report says.

A run's key is its identity (``tables.run.run_config``): a field that joins the model or training
configuration is hashed only away from the value the stored runs trained with (``ADDED_FIELDS``). A field
added without that declaration changes every key, and the profile's report finds no current run: the first
test here fails naming the field.
"""
from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass
from pathlib import Path

import pytest
from support.paths import ROOT

from experiments.tables import profiles, summary
from experiments.tables.profiles import get_profile
from experiments.tables.run import ADDED_FIELDS, current_keys, plan, run_config
from experiments.tables.store import ResultStore, RunRecord, config_key
from experiments.training.network import ModelConfig

RESULTS = ROOT / "results"
PROFILES = sorted(p.stem for p in RESULTS.glob("*.sqlite"))
DOCS = (ROOT / "docs" / "reproduction.md").read_text()
NUMBER = re.compile(r"(?<![\w.])(\d+\.\d+(?:e[-+]?\d+)?)(?![\w.])")


def stored(profile: str) -> list[RunRecord]:
    return ResultStore(RESULTS / f"{profile}.sqlite").runs(profile)


def test_the_committed_stores_are_the_four_profiles() -> None:
    assert PROFILES == ["causal", "cpu", "depth", "workers"]


def _planned_config(record: RunRecord) -> dict | None:
    """The configuration the profile plans now for the stored run's (table, heads, E, T, seed)."""
    for job in plan(get_profile(record.profile)):
        for heads, E, seed in job.runs:
            if (job.table.name, tuple(heads), E, job.seq_len, seed) == (record.table_name, record.heads,
                                                                       record.embed_dim, record.seq_len, record.seed):
                return json.loads(json.dumps(run_config(job.table, heads, E, job.seq_len, seed)))
    return None


def _differences(record: RunRecord) -> str:
    now = _planned_config(record)
    if now is None:
        return f"the profile no longer plans {record.table_name} {record.heads} T={record.seq_len}"
    changed = [f"{section}.{name}: stored {record.config[section].get(name, '<absent>')!r}, now "
               f"{now[section].get(name, '<absent>')!r}" for section in ("model", "train")
               for name in sorted(set(record.config[section]) | set(now[section]))
               if record.config[section].get(name, "<absent>") != now[section].get(name, "<absent>")]
    return "; ".join(changed) or "the fields outside model and train"


@pytest.mark.parametrize("profile", PROFILES)
def test_every_stored_run_is_a_run_the_profile_plans_now(profile: str) -> None:
    runs = stored(profile)
    current = current_keys(profile)
    stale = [r for r in runs if r.key not in current]
    assert not stale, (f"{len(stale)} of {len(runs)} stored runs of {profile} changed key: {_differences(stale[0])} "
                       "(a new field is declared in tables/run.py's ADDED_FIELDS with the value these runs had)")
    assert current == {r.key for r in runs}, "the profile plans runs the store does not hold: its report is partial"


@dataclass(frozen=True)
class _Grown(ModelConfig):
    new_switch: bool = False   # a switch the model gains after runs were stored; False: what they trained


def test_a_field_added_at_its_old_value_keeps_every_key(monkeypatch: pytest.MonkeyPatch) -> None:
    table = get_profile("cpu").tables[0]
    before = config_key(run_config(table, (4,), 32, 8, 0))
    plain = profiles.Table.model_config

    def grown(value: bool):
        return lambda self, *args, **kwargs: _Grown(**asdict(plain(self, *args, **kwargs)), new_switch=value)

    monkeypatch.setitem(ADDED_FIELDS["model"], "new_switch", False)
    monkeypatch.setattr(profiles.Table, "model_config", grown(False))
    assert config_key(run_config(table, (4,), 32, 8, 0)) == before
    monkeypatch.setattr(profiles.Table, "model_config", grown(True))
    assert run_config(table, (4,), 32, 8, 0)["model"]["new_switch"] is True   # another value trains another net
    monkeypatch.setattr(profiles.Table, "model_config", grown(False))
    monkeypatch.delitem(ADDED_FIELDS["model"], "new_switch")
    assert config_key(run_config(table, (4,), 32, 8, 0)) != before   # undeclared: the test above would fail


def report(profile: str) -> tuple[list[RunRecord], list[summary.ReportRow]]:
    current = current_keys(profile)
    records = [r for r in stored(profile) if r.key in current]
    return records, summary.summarize(records)


@pytest.mark.parametrize("profile", PROFILES)
def test_the_committed_report_is_the_store_s_report(profile: str, tmp_path: Path) -> None:
    records, rows = report(profile)
    out = tmp_path / f"{profile}_report.md"
    summary.write_markdown(rows, records, profile, str(out))
    committed = (RESULTS / f"{profile}_report.md").read_text()
    text, _, plots = committed.partition("\n## Plots\n")
    assert out.read_text() == text.rstrip("\n") + "\n"
    for picture in re.findall(r"\]\(([^)]+)\)", plots):
        assert (RESULTS / picture).is_file(), picture
    committed_json = RESULTS / f"{profile}_report.json"
    if committed_json.exists():
        expected = summary.to_json(rows, profile, summary.run_checks(rows, profile))
        assert json.loads(committed_json.read_text()) == json.loads(expected)


def run_line(profile: str, records: list[RunRecord], rows: list[summary.ReportRow]) -> str:
    """How docs/reproduction.md names a profile's run: every figure the report prints about it."""
    (workers,), (threads,) = ({r.hardware["worker_processes"] for r in records},
                              {r.hardware["torch_threads"] for r in records})
    (cpu,), (cores,) = {r.hardware["cpu_model"] for r in records}, {r.hardware["cpu_count"] for r in records}
    return (f"`results/{profile}_report.md`: {len(records)} runs in {workers} worker "
            f"process{'es' if workers != 1 else ''} of {threads} torch thread{'s' if threads != 1 else ''} "
            f"each on {cpu} ({cores} cores), {summary.elapsed_s(records):.0f} s from the first job's start to the "
            f"last run committed, {sum(r.wall_s for r in rows):.0f} s of training summed over the jobs")


def section(line: str) -> str:
    """The docs section (from its ``## `` heading to the next) that holds ``line``."""
    at = DOCS.index(line)
    start = DOCS.rfind("\n## ", 0, at)
    end = DOCS.find("\n## ", at)
    return DOCS[start:end if end >= 0 else len(DOCS)]


def _same(quoted: str, value: float | None) -> bool:
    """``value`` printed to as many significant digits as ``quoted`` has."""
    if value is None:
        return False
    digits = len(re.sub(r"e.*$", "", quoted).replace(".", "").lstrip("0"))
    return float(f"{value:.{max(1, digits)}g}") == float(quoted)


@pytest.mark.parametrize("profile", PROFILES)
def test_reproduction_quotes_each_report(profile: str) -> None:
    records, rows = report(profile)
    line = run_line(profile, records, rows)
    assert line in DOCS, f"docs/reproduction.md should name the run as the report does: {line}"
    figures = [x for r in rows for x in (r.nmse_min, r.nmse_median, r.paper_nmse)]
    tables = [row for row in section(line).split("\n") if row.startswith("|")]
    quoted = [(number, row) for row in tables for number in NUMBER.findall(row)]
    assert quoted, f"no table of {profile} in its docs section"
    wrong = [(number, row) for number, row in quoted if not any(_same(number, x) for x in figures)]
    assert not wrong, f"figures the {profile} report does not print: {wrong[:3]}"
