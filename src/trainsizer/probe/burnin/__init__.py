"""Burn-in monitor: sustained GPU load with NVML sampling into SQLite, and a STABLE / WARN / FAIL verdict.

``run_burnin(...)`` and ``report(db_path)`` are the entry points (imported lazily so that importing this
package stays cheap for the CLI).
"""

from __future__ import annotations

from typing import Any

__all__ = ["report", "run_burnin"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from trainsizer.probe.burnin import run

        return getattr(run, name)
    raise AttributeError(name)
