"""The evidence behind the estimates: the measured cases (loading, the settings their sources state), replaying
them (``trainsizer validate``), fitting the model's parameters (``trainsizer calibrate``, ``tools/fit_*.py``),
cross-validation (leave one source out, leave one GPU family out, nested), the 80 % ranges' fit and the audits of
what each fitted parameter rests on. The estimate and the planner never import this package: they read what it
wrote (``estimate/*.yaml``)."""
