"""Fit the 80 % ranges around every estimate from the model's cross-validated errors; write them as data.

Usage: python tools/fit_ranges.py [--check]
(reads every shipped case: validation/cases/ and validation/published/ of this repository)

Each case is predicted by parameters fitted without its publication (evidence/holdout.py: fitted on the cases as
annotated, as the shipped parameters are), the case written as a user states it (evidence/user_view.py: the user
view, its framework where its source names one); the errors u = log(measured / predicted) give, for memory and
speed, the conformal 10 % / 90 % quantiles pooled and per value of the regime dimensions chosen for the kind
(memory: by the held-out interval score), and the conformal corrections of each end (pooled and per GPU family)
that make a new publication's cases fall inside at 80 % (evidence/ranges_fit.py). The same is fitted on the cases
scored with no framework named (the one assumed for the method) as ``framework_not_stated``: a scenario that names
none gets the wider of the two per end. The file states the cases it was fitted on and the date of the newest one
(no clock date), so a rerun on the same cases rewrites src/trainsizer/estimate/ranges.yaml byte for byte; rerun it
after the cases or the model change. ``--check`` exits 1 when the shipped file differs from a refit.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import yaml

from trainsizer.estimate.ranges import NOT_STATED
from trainsizer.evidence.cases import load_cases
from trainsizer.evidence.holdout import leave_one_out_views, predictions
from trainsizer.evidence.ranges_fit import fit_ranges, residuals
from trainsizer.evidence.shipped_cases import label, shipped_files
from trainsizer.evidence.user_view import UNSTATED, case_views

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "src/trainsizer/estimate/ranges.yaml"
HEADER = """\
# 80 % ranges around trainsizer's estimates: WRITTEN BY tools/fit_ranges.py, do not edit by hand.
# u = log(measured / predicted) of each shipped case predicted leave-one-source-out, written as a user states it
# (validate --view user; memory: the metric the case measured; speed: tokens per second). lo / hi: the conformal
# 10 % / 90 % quantiles of u; cases / sources: how many back the row. weighting: case (each case weighs one in the
# quantiles and corrections) or publication (each
# publication weighs one in all), the kind's fixed choice (ranges_fit.WEIGHTING), both scored in weighting_selection.
# dimensions: the regime dimensions the kind's ranges are conditioned on (memory: the candidate whose
# ranges gave the held-out publications the lowest mean interval score, each candidate's in selection; speed: all
# three and the model's kind, dense or MoE). A scenario's range: each of its dimensions' rows shrunk toward pooled by s
# / (s + shrinkage_sources), the median the mean of theirs, each side the widest of theirs; a value no case shows takes
# no_evidence (symmetric about the median, each family weighing one); then each end moved out by correction (its GPU
# family's, else pooled: conformalized quantile regression on the publications held out in turn; negative: the quantiles
# were wider than needed; a no_evidence range only by unseen, from the publications that were the only source of their
# family, never negative), and for speed further by its model kind's (correction.model: what that kind's cases still
# needed against the family-corrected ranges, never negative; the families' own fitted on their dense models' cases).
# gpu_parts: the GPU parts the speed cases measured (another part of a measured family takes no_evidence).
# framework_not_stated: the same fit on the cases scored with no framework named (the one assumed for the method);
# a scenario that names no framework gets, per end, the wider of its range above and this block's.
# See estimate/ranges.py.
"""


def refit() -> tuple[dict[str, Any], str]:
    """The fitted data and the file's text."""
    files = shipped_files()
    cases = [c for path in files for c in load_cases(path)]
    views = {k: v for k, v in case_views(cases).items() if k in ("user", UNSTATED)}
    held = leave_one_out_views(cases, views)
    res = residuals(views["user"], predictions(held["user"]))
    unstated = fit_ranges(residuals(views[UNSTATED], predictions(held[UNSTATED])))
    data = {"source": "tools/fit_ranges.py on the leave-one-source-out errors, in the user view, of "
                      + ", ".join(label(f) for f in files),
            "as_of": max(c.as_of for c in cases),
            "fitted_on": {k: len(v) for k, v in res.items()},
            **fit_ranges(res), NOT_STATED: {k: unstated[k] for k in ("memory", "speed")}}
    return data, HEADER + yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=120)


def main(argv: list[str]) -> int:
    _, text = refit()
    if "--check" in argv:
        same = DATA.is_file() and DATA.read_text(encoding="utf-8") == text
        print("ranges.yaml is up to date" if same else "ranges.yaml differs from a refit: run tools/fit_ranges.py")
        return 0 if same else 1
    DATA.write_text(text, encoding="utf-8")
    print(f"wrote {DATA.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
