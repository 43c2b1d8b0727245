"""What a plan is asked (:class:`PlanRequest`): the GPUs allowed, counts, deadline, site, money terms and what to
show. It checks its own numbers when it is made, so the command line, the web page and the Python API refuse the
same values with the same message (naming the command-line flag; the page names its own field for it,
web/service.py)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from trainsizer.errors import N_
from trainsizer.input_checks import count_in_range, finite_positive
from trainsizer.workflows.defaults import (
    DEFAULT_HORIZON_YEARS,
    DEFAULT_MAX_GPUS,
    DEFAULT_MAX_OOM_RISK,
    DEFAULT_OBJECTIVE,
    DEFAULT_TOP,
)

MAX_TOP = 1000
MAX_HORIZON_YEARS = 15.0
MAX_SETUP_MINUTES = 10_000.0


@dataclass(frozen=True, kw_only=True)
class PlanRequest:
    gpus: tuple[str, ...] = ()
    max_gpus: int = DEFAULT_MAX_GPUS
    deadline_s: float | None = None
    gpus_per_node: int | None = None
    top: int = DEFAULT_TOP
    site: str | None = None
    budget: float | None = None
    currency: str | None = None
    horizon_years: float = DEFAULT_HORIZON_YEARS
    utilisation: float | None = None  # of bought hardware; with runs_per_month None too, the job runs once
    prices: tuple[Path, ...] = ()
    sites: tuple[Path, ...] = ()
    catalogs: tuple[Path, ...] = ()
    lang: str | None = None
    calibration: Path | None = None
    market: str | None = None  # cn | global; default from currency, site and locale (hardware.market)
    objective: str = DEFAULT_OBJECTIVE  # workflows.decide.OBJECTIVES
    runs_per_month: float | None = None
    electricity_price: float | None = None  # the user's own bill, per kWh in the site's currency
    voucher: str | None = None  # a subsidy id from prices.yaml (e.g. the Chengdu compute voucher) on rentals
    time_value: float | None = None  # money per wall-clock hour of a run; None: the default (workflows.time_value)
    all_options: bool = False  # every option searched (--all), not only those sized to the job (decide.sized_to_job)
    max_oom_risk: float = DEFAULT_MAX_OOM_RISK  # the most a recommended layout may risk running out of memory
    setup_minutes: float | None = None  # start to first step of a rented run; None: the default (setup_time)

    def __post_init__(self) -> None:
        """Each number in its accepted range (errors.InputError naming the flag), before any work is done."""
        currency = self.currency or "the currency"
        finite_positive(self.deadline_s, "--deadline", N_("a duration > 0 such as 7d, 36h or 90m"))
        finite_positive(self.budget, "--budget", f"a finite amount > 0 in {currency}")
        finite_positive(self.utilisation, "--utilisation", N_("a fraction in (0, 1]"), maximum=1.0)
        finite_positive(self.runs_per_month, "--runs-per-month", N_("a finite number of runs > 0"))
        finite_positive(self.horizon_years, "--horizon", N_("years > 0"), maximum=MAX_HORIZON_YEARS)
        if self.setup_minutes:
            finite_positive(self.setup_minutes, "--setup", N_("minutes >= 0"), maximum=MAX_SETUP_MINUTES)
        if self.max_oom_risk != 0:
            finite_positive(self.max_oom_risk, "--max-oom-risk", N_("a fraction in (0, 1]"), maximum=1.0)
        if self.time_value:
            finite_positive(self.time_value, "--time-value", f"an amount >= 0 per hour in {currency}")
        count_in_range(self.top, "--top", 1, MAX_TOP)
