"""The machine's name as benchmarks and experiment records write it."""
from __future__ import annotations

import platform
from pathlib import Path

import pytest

from infoflow_smt import machine


@pytest.mark.skipif(not Path("/proc/cpuinfo").exists(), reason="Linux only: /proc/cpuinfo")
def test_the_processor_named_by_proc_cpuinfo():
    names = [line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
             if line.startswith("model name")]
    assert machine.cpu_model() == (names[0] if names else platform.processor() or platform.machine())


def test_without_proc_cpuinfo_the_platform_names_it(monkeypatch):
    def unreadable(*args, **kwargs):
        raise OSError("no /proc here")

    monkeypatch.setattr(machine, "open", unreadable, raising=False)
    monkeypatch.setattr(platform, "processor", lambda: "")
    monkeypatch.setattr(platform, "machine", lambda: "riscv64")
    assert machine.cpu_model() == "riscv64"
    monkeypatch.setattr(platform, "processor", lambda: "Some CPU")
    assert machine.cpu_model() == "Some CPU"
