"""The defaults every face shares (CLI, report, web, Python API), in one place. Light: no imports."""

DEFAULT_MAX_GPUS = 1024  # the whole space the planner searches in about a second (benchmarks/bench_plan.py)
DEFAULT_HORIZON_YEARS = 3.0  # years bought hardware is used for the horizon view of owning it
DEFAULT_TOP = 10  # options shown per ranking
DEFAULT_OBJECTIVE = "cheapest"  # workflows.decide.OBJECTIVES
