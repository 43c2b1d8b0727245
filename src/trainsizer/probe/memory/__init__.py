"""``trainsizer probe memory``: peak memory of real training steps (``measure``), on fake tensors (``simulate``),
over several ranks (``distributed``), written as measured cases (``cases``)."""
