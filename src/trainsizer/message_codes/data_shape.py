"""Messages: the data shape (``data:`` of a scenario, estimate/data_shape.py) and ``trainsizer data-shape``."""

from __future__ import annotations

from trainsizer.i18n import N_
from trainsizer.message_codes.registry import _c

# estimate/data_shape.py: what the data shape put in the estimate
_c("data.lengths", N_("data shape: memory at the longest micro-batch ({memory} tokens per sequence), step time at the "
                      "expected one ({step} tokens); {share} of the tokens a step processes are the dataset's"),
   memory="int", step="int", share="pct")
_c("data.packed", N_("data shape: packed sequences of {seq} tokens"), seq="int")
_c("data.documents", N_("data shape: packed documents attend only to themselves: {documents} tokens each, as "
                        "attention sees them (sum of squares / sum)"), documents="int")
_c("data.assumed_spread", N_("data shape: only a mean and a max were given, so the lengths are assumed spread as max x "
                             "U^k (short samples common); a histogram from trainsizer data-shape replaces this"))
_c("data.throughput", N_("tokens/s counts the dataset's tokens (padding excluded); TFLOPS and MFU count what the GPUs "
                         "process (padding included)"))
