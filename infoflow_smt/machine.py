"""The machine a measurement ran on, as benchmarks and experiment records name it."""
from __future__ import annotations

import platform


def cpu_model() -> str:
    """The processor's name: ``/proc/cpuinfo`` on Linux (where ``platform.processor()`` is often empty),
    the platform's strings elsewhere."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as info:
            for line in info:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()
