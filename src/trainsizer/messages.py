"""What the engine says, as data: a :class:`Message` is a stable ``code`` and typed ``args`` (figures, ids,
money with its currency, nested messages for a clause), never an English sentence.

The engine (plan, cost, system, workflows, estimate) builds messages with :func:`msg`; the faces render them
in the reader's language through the gettext catalog (``trainsizer.report.message_text``: English is a
rendering too), and ``--json`` carries each as ``{"code", "args", "text"}``. Each code is registered once,
in ``trainsizer/message_codes/``: its catalog message id (or singular and plural from ``NP_``) and the
kind of each argument, which says how the argument is shown (:data:`KINDS`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypedDict

from trainsizer.message_codes import CODES
from trainsizer.message_pages import PAGE

# The kinds of argument and how each is shown (the renderer implements them; a sample value for tests).
KINDS: dict[str, tuple[str, Any]] = {
    "num0": ("a number, no decimals, thousands separated", 12345.0),
    "num1": ("a number, one decimal", 2.63),
    "num2": ("a number, two decimals", 1.234),
    "num3": ("a number, three decimals", 0.5625),
    "loss": ("a loss kind: standard, chunked, compute-dtype, vocab-parallel", "chunked"),
    "g": ("a number as written (no trailing zeros)", 0.8),
    "e1": ("a number in scientific notation, one decimal", 1234567.0),
    "int": ("a whole number", 8),
    "pct": ("a fraction shown as a whole percentage", 0.456),
    "pct1": ("a fraction shown as a percentage with one decimal", 0.0456),
    "signed_pct": ("a fraction shown as a signed percentage", 0.03),
    "text": ("verbatim: a command, a path, a date, a data line", "2024"),
    "small_money": ("a small amount with cents: {amount, currency}", {"amount": 0.1234, "currency": "USD"}),
    "acquisition": ("rent or buy", "rent"),
    "hours": ("a count of hours", 720.0),
    "money": ("an amount with its currency: {amount, currency}", {"amount": 1234567.0, "currency": "CNY"}),
    "gpu": ("a GPU id, shown as its product name", "h100-sxm5-80gb"),
    "gpus_list": ("a list of GPU ids ('...' for more)", ["h100-sxm5-80gb", "a100-sxm4-80gb", "..."]),
    "vendors": ("accelerator vendor codes, each shown as its name", ["nvidia", "huawei"]),
    "site": ("a site id, shown as its name", "chengdu-legacy-colo"),
    "link": ("a link id, shown as its name", "ib-ndr-400"),
    "links": ("link ids joined by ' + ', each shown as its name", "nvlink4 + ib-ndr-400"),
    "voucher": ("a compute voucher id, shown as its name", "chengdu-compute-voucher-2025"),
    "server": ("a priced server: {id, gpus, gpu}, shown as its name", {"id": "a100-sxm4-80gb-8x", "gpus": 8,
                                                                       "gpu": "a100-sxm4-80gb"}),
    "component": ("a component of the price data, shown as its name", "nic_400g"),
    "opex": ("an operating cost of the price data, shown as its name", "staff_cost_per_year"),
    "section": ("a section of a model or sizing data file, shown as its name", "allocator"),
    "market": ("a market code: cn, global", "cn"),
    "term": ("a rental term code: on-demand, monthly, ...", "monthly"),
    "cooling": ("a cooling code: air, rear-door, liquid", "air"),
    "binds": ("what limits a rack: power, cooling", "power"),
    "step": ("a step-time term code: compute, tp_comm, ...", "tp_comm"),
    "storage": ("a storage kind: nas, parallel fs", "nas"),
    "span": ("a time span in days", 1.5),
    "duration": ("a time in seconds, shown in the unit that reads best", 93600.0),
    "hardware": ("GPUs of one type: {gpus, gpu}", {"gpus": 8, "gpu": "h100-sxm5-80gb"}),
    "n_gpus": ("a count of GPUs", 16),
    "n_servers": ("a count of servers", 2),
    "n_racks": ("a count of racks", 3),
    "n_days": ("a count of days", 12),
    "n_months": ("a count of months", 30),
    "clause": ("a nested message", None),
    "clauses": ("nested messages joined as clauses", None),
    "items": ("nested messages joined as a list", None),
    "sentences": ("nested messages, each a sentence", None),
}


@dataclass(frozen=True)
class Spec:
    """A registered code: its catalog message id (or singular and plural, chosen by the arg ``count``) and the
    kind of each argument."""

    msgid: str | tuple[str, str]
    kinds: Mapping[str, str]
    count: str = "n"
    page: str | None = None  # the web page's wording, where the message names a CLI flag
    names: frozenset[str] = frozenset()  # the argument names (the keys of ``kinds``), checked by msg()


def _registry() -> dict[str, Spec]:
    out = {}
    for code, (msgid, count, kinds) in CODES.items():
        unknown = [k for k in kinds.values() if k not in KINDS]
        if unknown:
            raise ValueError(f"message {code!r}: unknown kinds {unknown}")
        out[code] = Spec(msgid, kinds, count, PAGE.get(code), frozenset(kinds))
    unknown_page = set(PAGE) - set(out)
    if unknown_page:
        raise ValueError(f"page wordings of unknown codes: {sorted(unknown_page)}")
    return out


REGISTRY: dict[str, Spec] = _registry()


@dataclass(frozen=True, eq=True)
class Message:
    """One thing the engine says: a registered ``code`` and its ``args`` (see :func:`msg`)."""

    code: str
    args: Mapping[str, Any] = field(default_factory=dict)

    def __hash__(self) -> int:
        return hash((self.code, repr(sorted(self.args.items()))))

    def __str__(self) -> str:  # for logs and debugging; faces render through report.message_text
        return f"{self.code}{dict(self.args)}"

    def to_dict(self) -> dict[str, Any]:
        """``{"code", "args"}`` with nested messages as dicts too (the renderer adds ``text``)."""
        return {"code": self.code, "args": {k: _plain(v) for k, v in self.args.items()}}


def _plain(value: Any) -> Any:
    if isinstance(value, Message):
        return value.to_dict()
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


def msg(code: str, **args: Any) -> Message:
    """A message of a registered code; its args must be exactly the code's (a typo fails here, not in a face)."""
    spec = REGISTRY.get(code)
    if spec is None:
        raise KeyError(f"message code {code!r} is not registered in trainsizer/message_codes/")
    if args.keys() != spec.names:  # the engine makes thousands a plan: no set built per call
        raise TypeError(f"message {code!r} takes {sorted(spec.kinds)}, got {sorted(args)}")
    made = _new_message(Message)  # Message(code, args) without the frozen class's two object.__setattr__ calls
    made.__dict__.update(code=code, args=args)
    return made


_new_message = object.__new__


class MoneyArg(TypedDict):
    """A ``money`` argument: an amount in a currency (the face writes it in the reader's units)."""

    amount: float
    currency: str


def money(amount: float, currency: str) -> MoneyArg:
    """A ``money`` argument."""
    return {"amount": float(amount), "currency": currency}


def clauses(parts: Iterable[Message | None]) -> Message:
    """Messages read as one, clause after clause ("a; b" in English, "a；b" in Chinese)."""
    kept = [p for p in parts if p is not None]
    return kept[0] if len(kept) == 1 else msg("clauses", parts=kept)


def listing(parts: Iterable[Message | None]) -> Message:
    """Messages read as a list ("a, b")."""
    kept = [p for p in parts if p is not None]
    return kept[0] if len(kept) == 1 else msg("items", parts=kept)


def sample_args(code: str) -> dict[str, Any]:
    """Sample arguments of each kind, for tests that render every code."""
    nested = Message("plan.nothing_fits", {})
    out: dict[str, Any] = {}
    for name, kind in REGISTRY[code].kinds.items():
        many = kind in ("clauses", "items", "sentences")
        out[name] = nested if kind == "clause" else [nested, nested] if many else KINDS[kind][1]
    return out
