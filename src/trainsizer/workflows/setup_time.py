"""The minutes from a rented instance's start to the training's first step: start from the image, download the
weights, load them (``plan/planner.yaml`` ``setup``, assumed figures with their source; ``--setup`` states them).
A rented run bills them on every GPU like the training itself, and the run's time value counts them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from trainsizer.plan.planner_data import planner_data

if TYPE_CHECKING:  # the JSON's types, for annotations
    from trainsizer.plan.option_json import SetupJSON


@dataclass(frozen=True, slots=True)
class SetupTime:
    """Minutes from a rented instance's start to the first step, and whether they are the planner's default."""

    minutes: float
    assumed: bool  # the planner's default, not the user's --setup

    @property
    def hours(self) -> float:
        return self.minutes / 60

    @property
    def shown_minutes(self) -> float:
        """The minutes as the plan shows them (and the answer card bills them)."""
        return round(self.minutes, 1)

    def to_dict(self) -> SetupJSON:
        return {"minutes": self.shown_minutes, "assumed": self.assumed}


NONE = SetupTime(0.0, False)


def setup_time(params: int, stated_minutes: float | None) -> SetupTime:
    """The user's minutes, else start + the 16-bit weights downloaded + loaded (planner.yaml ``setup``)."""
    if stated_minutes is not None:
        return SetupTime(float(stated_minutes), False)
    s = planner_data().setup
    weights_mb = params * s.bytes_per_param / 1e6
    seconds = weights_mb / s.download_mb_per_s + weights_mb / 1e3 / s.load_gb_per_s
    return SetupTime(s.start_minutes + seconds / 60, True)
