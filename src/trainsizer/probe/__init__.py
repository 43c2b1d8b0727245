"""Hardware probes: checks that run on the real machine (burn-in monitor)."""
