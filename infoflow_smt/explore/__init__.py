"""Many questions at once: the feasibility frontier over every architecture, and cached, resumable sweeps."""
