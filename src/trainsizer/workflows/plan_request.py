"""What a plan is asked (:class:`PlanRequest`): the GPUs allowed, counts, deadline, site, money terms and what to
show. It checks its own numbers when it is made, so the command line, the web page and the Python API refuse the
same values with the same message (naming the command-line flag; the page names its own field for it,
web/service.py). Each field carries its command-line flag (:class:`RequestFlag`: names, help, units, accepted values,
bounds), from which trainsizer.request_flags generates the ``plan`` and ``report`` options."""

from __future__ import annotations

from dataclasses import Field, dataclass, field, fields
from pathlib import Path
from typing import Any

from trainsizer.currency import CURRENCIES
from trainsizer.errors import N_
from trainsizer.i18n import LANGS
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


@dataclass(frozen=True, slots=True)
class RequestFlag:
    """How a request's field is asked for on the command line (trainsizer.request_flags generates the ``plan`` and
    ``report`` options from these): its option names, its ``--help``, the unit of its number, its accepted values,
    its bounds (checked by :meth:`PlanRequest.__post_init__`; None: no limit that side), and whether the command line
    gives it as text to parse (a duration such as 7d)."""

    names: tuple[str, ...]
    help: str | None
    units: str = ""
    choices: tuple[str, ...] = ()
    bounds: tuple[float | None, float | None] | None = None
    as_text: bool = False


def _asked(default: Any, *names: str, help: str | None, **how: Any) -> Any:
    """A request field with its command-line flag (``RequestFlag``) in its metadata."""
    return field(default=default, metadata={"flag": RequestFlag(names, help, **how)})


def request_flag(name: str) -> RequestFlag:
    """The command-line flag of the request's field ``name``."""
    return PLAN_FIELDS[name].metadata["flag"]


@dataclass(frozen=True, kw_only=True)
class PlanRequest:
    """What the user asks of a plan (the command line's plan options, the web form, the Python API): each field's flag,
    help and bounds in its metadata (``request_flags``)."""

    gpus: tuple[str, ...] = _asked((), "--gpu", help="Allowed GPU id (repeatable); default: every GPU the market "
                                   "offers.")
    max_gpus: int = _asked(DEFAULT_MAX_GPUS, "--max-gpus", help="Largest GPU count to consider.", units="GPUs")
    deadline_s: float | None = _asked(None, "--deadline", help="Time to train at most, e.g. 7d, 36h (needs tokens).",
                                      units="s", bounds=(0, None), as_text=True)
    gpus_per_node: int | None = _asked(None, "--gpus-per-node", help=None, units="GPUs")
    top: int = _asked(DEFAULT_TOP, "--top", help="Options to show per ranking.", bounds=(1, MAX_TOP))
    site: str | None = _asked(None, "--site", help="Site id (trainsizer catalog sites) for bought hardware; "
                              "default: a modern colocation room.")
    budget: float | None = _asked(None, "--budget", help="Most to commit, in --currency: the capex of bought servers "
                                  "or a rental's minimum contract.", units="currency", bounds=(0, None))
    currency: str | None = _asked(None, "--currency", help="CNY | USD (default: CNY for a Chinese locale).",
                                  choices=CURRENCIES)
    horizon_years: float = _asked(DEFAULT_HORIZON_YEARS, "--horizon", help="Years bought hardware is used (its cost "
                                  "over them).", units="years", bounds=(0, MAX_HORIZON_YEARS))
    # of bought hardware; with runs_per_month None too, the job runs once
    utilisation: float | None = _asked(None, "--utilisation", help="Fraction of the time bought GPUs stay busy "
                                       "(default: the job runs once).", bounds=(0, 1.0))
    prices: tuple[Path, ...] = _asked((), "--prices", help="Your own quotes/prices YAML.")
    sites: tuple[Path, ...] = _asked((), "--sites", help="Your own sites YAML.")
    catalogs: tuple[Path, ...] = _asked((), "--catalog", help="Your own accelerators/links YAML (adds or overrides "
                                        "entries); repeatable.")
    lang: str | None = _asked(None, "--lang", help="en | zh-CN (default: from the locale).", choices=LANGS)
    calibration: Path | None = _asked(None, "--calibration", help="A profile from `trainsizer calibrate`: its fitted "
                                      "parameters replace the shipped ones.")
    # cn | global (hardware.catalog.MARKETS); default from currency, site and locale (hardware.market)
    market: str | None = _asked(None, "--market", help="cn | global: where the GPUs must be bought or rented "
                                "(default: cn for CNY, a Chinese site or locale).", choices=("cn", "global"))
    objective: str = _asked(DEFAULT_OBJECTIVE, "--objective", help="cheapest (per run) | fastest | fewest-gpus",
                            choices=("cheapest", "fastest", "fewest-gpus"))  # workflows.decide.OBJECTIVES
    runs_per_month: float | None = _asked(None, "--runs-per-month", help="Runs like this one a month on bought "
                                          "hardware.", bounds=(0, None))
    # the user's own bill, per kWh in the site's currency
    electricity_price: float | None = _asked(None, "--electricity-price", help="Your power bill per kWh (site "
                                             "currency), instead of the site's tariff.", units="currency per kWh")
    # a subsidy id from prices.yaml (e.g. the Chengdu compute voucher) on rentals
    voucher: str | None = _asked(None, "--voucher", help="Claim a compute voucher on rentals, e.g. "
                                 "chengdu-compute-voucher-2025 (prices.yaml subsidies).")
    # money per wall-clock hour of a run; None: the default (workflows.time_value)
    time_value: float | None = _asked(None, "--time-value", help="What an hour of waiting for the run is worth, in "
                                      "--currency; added to each run's cost to rank options (default: one engineer's "
                                      "loaded pay per hour, assumed; 0: the cheapest run).", units="currency per hour",
                                      bounds=(0, None))
    # every option searched (--all), not only those sized to the job (decide.sized_to_job)
    all_options: bool = _asked(False, "--all", help="Show every option searched, not only those sized to the job "
                               "(within a few times the answer's cost or GPU count).")
    # the most a recommended layout may risk running out of memory
    max_oom_risk: float = _asked(DEFAULT_MAX_OOM_RISK, "--max-oom-risk", help="The most a recommended layout may "
                                 "risk running out of GPU memory (0-1; its chance from the estimate's 80 % range).",
                                 bounds=(0, 1.0))
    # start to first step of a rented run; None: the default (setup_time)
    setup_minutes: float | None = _asked(None, "--setup", help="Minutes from a rented instance's start to the first "
                                         "step (image, weights download, loading), billed on every GPU (default: "
                                         "derived from the model's size, assumed).", units="minutes",
                                         bounds=(0, MAX_SETUP_MINUTES))

    def __post_init__(self) -> None:
        """Each number within its field's bounds (errors.InputError naming the flag), before any work is done."""
        from trainsizer.input_checks import count_in_range  # pydantic: not loaded to build the command line

        currency = self.currency or "the currency"
        self._within("deadline_s", N_("a duration > 0 such as 7d, 36h or 90m"))
        self._within("budget", f"a finite amount > 0 in {currency}")
        self._within("utilisation", N_("a fraction in (0, 1]"))
        self._within("runs_per_month", N_("a finite number of runs > 0"))
        self._within("horizon_years", N_("years > 0"))
        self._within("setup_minutes", N_("minutes >= 0"), zero=True)
        self._within("max_oom_risk", N_("a fraction in (0, 1]"), zero=True)
        self._within("time_value", f"an amount >= 0 per hour in {currency}", zero=True)
        flag = request_flag("top")
        count_in_range(self.top, flag.names[0], *flag.bounds)  # type: ignore[misc]

    def _within(self, name: str, accepted: str, zero: bool = False) -> None:
        """Field ``name`` above its lower bound (or 0 where ``zero`` allows it) and at most its upper one."""
        from trainsizer.input_checks import finite_positive

        value, flag = getattr(self, name), request_flag(name)
        if zero and not value:
            return
        finite_positive(value, flag.names[0], accepted, maximum=flag.bounds[1] if flag.bounds else None)


PLAN_FIELDS: dict[str, Field[Any]] = {f.name: f for f in fields(PlanRequest)}
