"""trainsizer: size AI training jobs, from per-GPU memory to servers, site and cost.

The public API is pure: build a :class:`~trainsizer.scenario.Scenario`, then call
:func:`~trainsizer.estimate.memory.estimate_memory` (or :func:`trainsizer.api.estimate`).
"""

from trainsizer.errors import InputError

__version__ = "0.1.0"
__all__ = ["InputError", "__version__"]
