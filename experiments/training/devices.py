"""Where a training runs: the device, torch's CPU threads, and how many worker processes share the machine.

Threads: on CPU ``configure_threads`` sets torch to ONE intra-op thread by default (``--threads N`` to
change). These models' ops are small (a step of a batched job is a few hundred kernels of well under a
millisecond), so OpenMP's fork/join costs more than a second core gains, and when anything else runs on the
machine its spinning barrier slows every op down. Jobs are independent, so the cores are used by worker
processes instead, one single-threaded process per core (``default_workers``). Inter-op threads: 1 (there is
no inter-op parallelism to use).
"""
from __future__ import annotations

import os

import torch

from infoflow_smt.machine import cpu_model

DEFAULT_CPU_THREADS = 1   # see the module docstring


def configure_threads(threads: int | None = None) -> int:
    """Set torch's CPU threads (default 1, see the module docstring); returns the count."""
    n = threads or DEFAULT_CPU_THREADS
    torch.set_num_threads(n)
    try:
        torch.set_num_interop_threads(1)
    except RuntimeError:  # only settable before the first parallel op; harmless to keep the current value
        pass
    return n


def pick_device(requested: str | None = None) -> torch.device:
    """``cuda`` when present (or requested), else ``cpu``; asking for cuda without one is an error."""
    if requested == "cuda" and not torch.cuda.is_available():
        raise ValueError("--device cuda requested but torch.cuda.is_available() is False")
    if requested:
        return torch.device(requested)
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def device_name(device: torch.device) -> str:
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    return cpu_model()


def default_workers(device: torch.device) -> int:
    """CPU: one single-threaded worker process per usable core (the module docstring); CUDA: one."""
    return len(os.sched_getaffinity(0)) if device.type == "cpu" else 1
