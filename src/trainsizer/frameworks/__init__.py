"""Framework profiles (``training.framework`` / ``--framework``): each shipped ``<family>.yaml`` holds the defaults a
framework release applies, read from its source and cited line by line, as values of the scenario's internals keys
(validation/FORMAT.md, "Extensions"). :func:`resolve` fills the keys a scenario leaves out from the profile; a key the
scenario states wins. A scenario that names no framework takes the one ``index.yaml`` assumes for its method, and the
estimate says so. A profile's ``methods`` are the training methods the release runs (each cited, and under a framework
with expert parallelism, whether it runs with it): a method a named framework does not run is refused. A profile's
``parallelism`` says which parallel layouts and whose accelerators the release runs (``parallelism.py``): a layout a
named framework does not run is refused, and the planner searches only those it runs."""

from trainsizer.frameworks.parallelism import Parallelism
from trainsizer.frameworks.profiles import (
    INTERNALS,
    FrameworkUse,
    Profile,
    Setting,
    assumed,
    check_gpu_vendor,
    expert_parallel_families,
    families,
    gpu_refused,
    load_profile,
    method_families,
    parallelism_of,
    resolve,
    runs_expert_parallel,
    runs_method,
)

__all__ = ["INTERNALS", "FrameworkUse", "Parallelism", "Profile", "Setting", "assumed", "check_gpu_vendor",
           "expert_parallel_families", "families", "gpu_refused", "load_profile", "method_families", "parallelism_of",
           "resolve", "runs_expert_parallel", "runs_method"]
