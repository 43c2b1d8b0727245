"""The defaults every face shares (CLI, report, web, Python API), in one place. Light: no imports."""

DEFAULT_MAX_GPUS = 1024  # the whole space the planner searches in about a second (benchmarks/bench_plan.py)
DEFAULT_HORIZON_YEARS = 3.0  # years bought hardware is used for the horizon view of owning it
DEFAULT_TOP = 10  # options shown per ranking
DEFAULT_OBJECTIVE = "cheapest"  # workflows.decide.OBJECTIVES

# A fit above 90 % of the GPU's memory is "tight", not "fits": the caching allocator fragments (blocks freed
# at one step's shapes do not serve the next), and variable-length batches move the peak from step to step,
# so a plan within 10 % of capacity often runs out of memory in practice (PyTorch "CUDA memory management":
# fragmentation, expandable_segments; data loaders that pack or bucket sequences change the activation peak).
TIGHT_FRACTION = 0.90  # a fit above this share of the GPU's memory is tight: shown so, recommended last

# The most a recommended layout may risk running out of memory (its chance from its 80 % memory range,
# workflows/robust.py); assumed: a one-in-ten chance of a failed first attempt is what a team accepts for a layout it
# would otherwise have to find itself. --max-oom-risk changes it. Options above it stay listed, never recommended.
DEFAULT_MAX_OOM_RISK = 0.10
