"""The engine's messages (``trainsizer.messages``) in the reader's language: each code's catalog message
filled with its arguments, each argument shown as its kind says (money in 万元 for CNY in Chinese, a GPU,
link, site, server or voucher by its name, "2 servers", a nested message as a clause), through
:mod:`trainsizer.report.words`.
English is a rendering like any other. ``as_json`` turns every message in a plan's data into
``{"code", "args", "text"}`` for ``--json``, the web API and the report's JSON file."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from trainsizer.hardware.vendors import vendor_name
from trainsizer.i18n import N_, ntr, tr
from trainsizer.messages import KINDS, REGISTRY, Message
from trainsizer.report import words as w

STEP_TERMS = {
    "compute": N_("compute"), "elementwise": N_("element-wise kernels"), "tp_comm": N_("tensor-parallel traffic"),
    "pp_p2p": N_("pipeline sends"), "pp_bubble": N_("the pipeline bubble"), "cp_comm": N_("context-parallel traffic"),
    "zero3_gather": N_("ZeRO-3 parameter gathers"), "dp_grad_sync": N_("the gradient all-reduce"),
    "optimizer": N_("the optimizer step"), "offload": N_("CPU offload"), "moe_all_to_all": N_("MoE all-to-all"),
    "data_loading": N_("data loading"), "launch_overhead": N_("kernel launches"),
    "dequantization": N_("dequantization"),
}
COOLING = {"air": N_("air"), "rear-door": N_("rear-door"), "liquid": N_("liquid")}
BINDS = {"power": N_("power"), "cooling": N_("cooling")}
LOSSES = {"standard": N_("standard"), "chunked": N_("chunked"), "compute-dtype": N_("compute-dtype"),
          "vocab-parallel": N_("vocab-parallel")}
STORAGE = {"nas": N_("NAS"), "parallel fs": N_("parallel file system")}
COMPONENTS = {  # the components of the price data (prices.yaml ``components``) by name
    "host_dram_per_gb": N_("host RAM (per GB)"), "nvme_ssd_per_tb": N_("NVMe SSD (per TB)"),
    "parallel_fs_per_tb": N_("parallel file system (per usable TB)"),
    "parallel_fs_minimum": N_("smallest parallel file system"), "nas_minimum": N_("NVMe NAS server"),
    "ib_ndr_switch_64port": N_("InfiniBand NDR switch, 64 ports"),
    "ib_hdr_switch_40port": N_("InfiniBand HDR switch, 40 ports"),
    "roce_400g_switch_64port": N_("400GbE RoCE switch, 64 ports"),
    "roce_200g_switch_64port": N_("200GbE RoCE switch, 64 ports"), "nic_400gbe": N_("400GbE RoCE network card"),
    "nic_200gbe": N_("200GbE RoCE network card"), "nic_400g": N_("400G InfiniBand network card"),
    "nic_200g": N_("200G InfiniBand network card"), "optical_transceiver_400g": N_("400G optical transceiver"),
    "rack_and_pdu": N_("rack with power distribution units"),
    "installation_per_server": N_("installation (per server)"),
    "liquid_cooling_retrofit_per_rack": N_("liquid-cooling retrofit (per rack)"),
}
OPEX = {"maintenance_fraction_per_year": N_("maintenance (share of the hardware a year)"),
        "staff_cost_per_year": N_("staff (a year)"), "residual_value_after_3_years": N_("residual value after 3 years"),
        "depreciation_years": N_("depreciation period")}
SECTIONS = {  # the sections of memory_model.yaml, performance_model.yaml, sizing.yaml and planner.yaml
    "activations": N_("activations"), "logits": N_("logits and loss"), "quantization": N_("quantization"),
    "optimizer": N_("optimizer states"), "communication": N_("communication"), "allocator": N_("allocator"),
    "device": N_("device overhead"), "compute": N_("compute"), "memory_bound": N_("memory-bound kernels"),
    "overhead": N_("overheads"), "host": N_("host RAM and CPU"), "storage": N_("storage"), "network": N_("network"),
    "power": N_("power"), "host_memory": N_("host memory"), "delivery_lead_time": N_("delivery lead time"),
    "adapter_methods": N_("adapter methods"),
}


def _gpu_list(ids: list[str], lang: str) -> str:
    return w.listing([tr("…", lang) if i == "..." else w.gpu_name(i, lang) for i in ids], lang)


def _sentences(parts: list[str], lang: str) -> str:
    out = ""
    for p in parts:
        out = w.sentences(out, p, lang) if out else p
    return out


def _span(days: float, lang: str) -> str:
    """A span given in days, in the unit that reads best (minutes, hours or days: ``words.duration``)."""
    return w.duration(days * 86400, lang)


FORMATS: dict[str, Callable[[Any, str], str]] = {
    "num0": lambda v, lang: f"{float(v):,.0f}",
    "num1": lambda v, lang: f"{float(v):,.1f}",
    "num2": lambda v, lang: f"{float(v):,.2f}",
    "num3": lambda v, lang: f"{float(v):,.3f}",
    "loss": lambda v, lang: w.word(LOSSES, v, lang),
    "g": lambda v, lang: f"{float(v):g}",
    "e1": lambda v, lang: f"{float(v):.1e}",
    "int": lambda v, lang: str(int(v)),
    "pct": lambda v, lang: f"{float(v):.0%}",
    "pct1": lambda v, lang: f"{float(v):.1%}",
    "signed_pct": lambda v, lang: f"{float(v):+.0%}",
    "text": lambda v, lang: str(v),
    "money": lambda v, lang: w.money(v["amount"], v["currency"], lang),
    "small_money": lambda v, lang: w.small_money(v["amount"], v["currency"], lang),
    "acquisition": lambda v, lang: w.word(w.ACQUISITIONS, v, lang),
    "hours": lambda v, lang: w.count(w.HOURS, v, lang, 2),
    "gpu": lambda v, lang: w.gpu_name(v, lang),
    "gpus_list": _gpu_list,
    "vendors": lambda v, lang: w.listing([tr(vendor_name(code), lang) for code in v], lang),
    "site": lambda v, lang: w.site_name(v, lang),
    "link": lambda v, lang: w.link_name(v, lang),
    "links": lambda v, lang: w.links(str(v).split(" + "), lang),
    "voucher": lambda v, lang: w.voucher_name(v, lang),
    "server": lambda v, lang: w.server(v, lang),
    "component": lambda v, lang: w.word(COMPONENTS, v, lang),
    "opex": lambda v, lang: w.word(OPEX, v, lang),
    "section": lambda v, lang: w.word(SECTIONS, v, lang),
    "market": lambda v, lang: w.word(w.MARKETS, v, lang),
    "term": lambda v, lang: w.word(w.TERMS, v, lang),
    "cooling": lambda v, lang: w.word(COOLING, v, lang),
    "binds": lambda v, lang: w.word(BINDS, v, lang),
    "step": lambda v, lang: w.word(STEP_TERMS, v, lang),
    "storage": lambda v, lang: w.word(STORAGE, v, lang),
    "span": lambda v, lang: _span(float(v), lang),
    "duration": lambda v, lang: w.duration(v, lang),
    "hardware": lambda v, lang: w.hardware(v["gpus"], v["gpu"], lang),
    "n_gpus": lambda v, lang: w.gpus(v, lang),
    "n_servers": lambda v, lang: w.servers(v, lang),
    "n_racks": lambda v, lang: w.racks(v, lang),
    "n_days": lambda v, lang: w.days(v, lang),
    "n_months": lambda v, lang: w.months(v, lang),
    "clause": lambda v, lang: text(v, lang),
    "clauses": lambda v, lang: w.join([text(p, lang) for p in v], lang),
    "items": lambda v, lang: w.listing([text(p, lang) for p in v], lang),
    "sentences": lambda v, lang: _sentences([text(p, lang) for p in v], lang),
}
assert set(FORMATS) == set(KINDS), set(FORMATS) ^ set(KINDS)


_FACE: ContextVar[str] = ContextVar("message_face", default="")


@contextmanager
def face(name: str) -> Iterator[None]:
    """Messages rendered inside take the wording of face ``name`` where a code has one (``"page"``: the web
    page's, which names form fields instead of CLI flags; message_pages.PAGE)."""
    token = _FACE.set(name)
    try:
        yield
    finally:
        _FACE.reset(token)


def text(m: Any, lang: str) -> str:
    """A message in ``lang`` (a plain string, e.g. a line of data, as it is; None as "")."""
    if m is None or m == "":
        return ""
    if not isinstance(m, Message):
        return str(m)
    spec = REGISTRY[m.code]
    values = {name: FORMATS[spec.kinds[name]](value, lang) for name, value in m.args.items()}
    if m.code in ("clauses", "items", "sentences"):
        return values["parts"]
    if spec.page and _FACE.get() == "page":
        return tr(spec.page, lang, **values)
    if isinstance(spec.msgid, tuple):
        return ntr(spec.msgid, float(m.args[spec.count]), lang, **values)
    return tr(spec.msgid, lang, **values)


def texts(messages: Any, lang: str) -> list[str]:
    return [text(m, lang) for m in messages or []]


_PLAIN = (str, int, float, bool, type(None))


def as_json(obj: Any, lang: str = "en") -> Any:
    """``obj`` with every message as ``{"code", "args", "text"}`` (nested messages too), in ``lang``."""
    kind = type(obj)  # exact types first: a plan's answer is ~2,000 values (the ABC checks below cost more)
    if kind in _PLAIN:
        return obj
    if kind is dict:
        return {(text(k, lang) if isinstance(k, Message) else k): as_json(v, lang) for k, v in obj.items()}
    if kind is list:
        return [as_json(v, lang) for v in obj]
    if isinstance(obj, Message):
        return {"code": obj.code, "args": {k: as_json(v, lang) for k, v in obj.args.items()},
                "text": text(obj, lang)}
    if isinstance(obj, Mapping):
        return {(text(k, lang) if isinstance(k, Message) else k): as_json(v, lang) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [as_json(v, lang) for v in obj]
    return obj
