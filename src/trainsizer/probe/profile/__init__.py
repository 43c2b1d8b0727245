"""``trainsizer probe profile``: where a step's time goes, from a Kineto trace (``analysis``), the trace of a
user's own script (``runner``), the 20 % rules (``rules.yaml``, ``verdict``) and the command (``cli``)."""
