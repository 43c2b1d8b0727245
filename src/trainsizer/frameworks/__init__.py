"""Framework profiles (``training.framework`` / ``--framework``): each shipped ``<family>.yaml`` holds the defaults a
framework release applies, read from its source and cited line by line, as values of the scenario's internals keys
(validation/FORMAT.md, "Extensions"). :func:`resolve` fills the keys a scenario leaves out from the profile; a key the
scenario states wins. A scenario that names no framework takes the one ``index.yaml`` assumes for its method, and the
estimate says so. A profile's ``methods`` are the training methods the release runs (each cited, and under a framework
with expert parallelism, whether it runs with it): a method a named framework does not run is refused."""

from trainsizer.frameworks.profiles import (
    INTERNALS,
    FrameworkUse,
    Profile,
    Setting,
    assumed,
    expert_parallel_families,
    families,
    load_profile,
    method_families,
    resolve,
    runs_expert_parallel,
    runs_method,
)

__all__ = ["INTERNALS", "FrameworkUse", "Profile", "Setting", "assumed", "expert_parallel_families", "families",
           "load_profile", "method_families", "resolve", "runs_expert_parallel", "runs_method"]
