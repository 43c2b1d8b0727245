"""The bounds on every YAML file read (``yaml_text`` enforces them while parsing; ``datafiles`` refuses a file over
the size from its length, before PyYAML is imported). Every shipped file (src/trainsizer/**/*.yaml,
validation/**/*.yaml, examples/) is far inside them: the largest is 205 kB (validation/published/throughput.yaml),
the most values after aliases 6,722 (hardware/accelerators.yaml, 120 aliases), the deepest 6 levels."""

MAX_YAML_BYTES = 4 * 2**20  # 4 MiB: 20x the largest shipped file; a job file is a few kB
MAX_YAML_VALUES = 200_000  # scalars, lists and mappings counted as if every alias were written out in full
MAX_YAML_ALIASES = 1_000  # '*name' references per file
# libyaml's own composer recurses in C (a 100,000-deep '[[[...' overflows the stack: a segfault, measured with
# PyYAML 6.0.3): nodes are composed here, by PyYAML's Python composer, never deeper than this
MAX_YAML_DEPTH = 64
