"""Messages in English and Chinese from one gettext catalog. The language comes from --lang, else from the
locale.

The English text in the code is the message id; the Chinese is in
``locale/zh_CN/LC_MESSAGES/trainsizer.po``, compiled to the ``.mo`` next to it, which ships as package data
and is read here with the standard library's :mod:`gettext` (Babel extracts and compiles the catalog; it is
not needed to run). ``N_`` and ``NP_`` mark text for extraction where it is defined and translated where it
is shown. Placeholders are ``str.format`` fields: ``tr("{n} GPUs", lang, n=8)``.
"""

from __future__ import annotations

import gettext
import locale
import os
from functools import cache
from pathlib import Path
from typing import Any

from trainsizer.errors import InputError

LANGS = ("en", "zh-CN")
DOMAIN = "trainsizer"
LOCALE_DIR = Path(__file__).parent / "locale"
GETTEXT_LOCALES = {"zh-CN": "zh_CN"}  # en is the message ids themselves


def N_(msgid: str) -> str:
    """Mark a message for extraction where it is defined; ``tr`` translates it where it is shown."""
    return msgid


def NP_(singular: str, plural: str) -> tuple[str, str]:
    """Mark a message with a plural for extraction; ``ntr`` picks the form."""
    return singular, plural


LABELS: dict[str, str] = {
    "title": N_("Per-GPU memory (most loaded GPU)"),
    "scenario": N_("Scenario"),
    "component": N_("Component"),
    "gib": N_("GiB"),
    "why": N_("Where it comes from"),
    "allocated": N_("allocated (torch max_memory_allocated)"),
    "reserved": N_("reserved (allocator cache)"),
    "device": N_("device (nvidia-smi: + CUDA context, NCCL)"),
    "capacity": N_("capacity"),
    "fits": N_("FITS"),
    "no_fit": N_("DOES NOT FIT"),
    "headroom": N_("headroom"),
    "limits": N_("Largest that still fits"),
    "max_mbs": N_("micro-batch (at this seq_len)"),
    "max_seq": N_("sequence length (at this micro-batch)"),
    "rule": N_("Seed guide's rule of thumb"),
    "rule_value": N_("rule per GPU"),
    "estimate": N_("trainsizer per GPU"),
    "off_by": N_("off by"),
    "peak_phase": N_("peak during"),
    "notes": N_("Notes"),
    "nothing_fits": N_("not even 1"),
    "validation": N_("Validation: predicted vs measured"),
    "case": N_("case"),
    "metric": N_("metric"),
    "measured": N_("measured"),
    "predicted": N_("predicted"),
    "error": N_("error"),
    "excluded": N_("excluded from fit"),
}


def resolve_lang(lang: str | None) -> str:
    """``lang`` when given; else ``TRAINSIZER_LANG`` (en or zh-CN), else the locale (LC_ALL, LANG)."""
    if lang is None:
        chosen = os.environ.get("TRAINSIZER_LANG")
        if chosen in LANGS:
            return chosen
        env = os.environ.get("LC_ALL") or os.environ.get("LANG") or (locale.getlocale()[0] or "")
        return "zh-CN" if env.lower().startswith("zh") else "en"
    if lang not in LANGS:
        raise InputError("--lang", N_("{value!r} is not accepted; accepted: {accepted}"), value=lang,
                         accepted=", ".join(LANGS))
    return lang


def lang_of_argv(argv: list[str]) -> str:
    """The language a command line asks for (``--lang X`` or ``--lang=X``; an unknown one: English), else
    :func:`resolve_lang`'s default: for what is said before or beside the command's own ``--lang`` (its errors)."""
    for i, arg in enumerate(argv):
        value = argv[i + 1] if arg == "--lang" and i + 1 < len(argv) else arg[7:] if arg.startswith("--lang=") else None
        if value is not None:
            return value if value in LANGS else "en"
    return resolve_lang(None)


@cache
def translations(lang: str) -> gettext.NullTranslations:
    """The compiled catalog of ``lang`` (English: the message ids as they are)."""
    code = GETTEXT_LOCALES.get(lang)
    if code is None:
        return gettext.NullTranslations()
    return gettext.translation(DOMAIN, LOCALE_DIR, [code])


def tr(msgid: str, lang: str, /, **params: Any) -> str:
    """``msgid`` in ``lang``, its ``{fields}`` filled from ``params``."""
    text = translations(lang).gettext(msgid)
    return text.format(**params) if params else text


def ntr(forms: tuple[str, str], n: float, lang: str, /, **params: Any) -> str:
    """The singular or plural of ``forms`` (from ``NP_``) for ``n`` in ``lang``; ``{n}`` is filled too."""
    count = int(n) if float(n).is_integer() else 2  # 1.5 days: plural
    text = translations(lang).ngettext(forms[0], forms[1], count)
    return text.format(**{"n": n, **params})


def t(key: str, lang: str) -> str:
    """A label of :data:`LABELS` in ``lang``."""
    return tr(LABELS[key], lang)


def extract_yaml_names(fileobj: Any, keywords: Any, comment_tags: Any, options: dict[str, str]) -> Any:
    """Babel extractor (babel.cfg): the ``name`` of each entry of a data file's lists (``list`` option, one or
    more separated by spaces, e.g. the sites of sites.yaml, the servers and vouchers of prices.yaml), so that the
    shipped names are translated with everything else."""
    import yaml

    text = fileobj.read().decode("utf-8")
    lines = text.splitlines()
    data = yaml.safe_load(text)
    for key in options.get("list", "sites").split():
        for entry in data.get(key, []):
            name = entry.get("name")
            if name:
                line = next((i + 1 for i, ln in enumerate(lines) if f"id: {entry['id']}" in ln), 0)
                yield line, None, name, ["name of " + str(entry["id"])]


def default_currency(lang: str | None = None) -> str:
    """The currency of a user who names none: CNY for a Chinese (zh-CN) interface, else USD (``lang`` as
    :func:`resolve_lang` reads it: None takes the locale)."""
    return "CNY" if resolve_lang(lang) == "zh-CN" else "USD"
