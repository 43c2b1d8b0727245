"""The built-in training workload the memory and profile probes run: the scenario's model as a PyTorch module
(``build``), its configuration and scaled-down depth (``config``), and the safety checks before real work
(``safety``: no silent CPU fallback, nothing too big for this machine)."""
