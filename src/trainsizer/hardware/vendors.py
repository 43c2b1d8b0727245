"""Accelerator vendors by name: the catalog's ``vendor`` codes as a reader knows them (translated on display)."""

from __future__ import annotations

from trainsizer.i18n import N_

VENDOR_NAMES: dict[str, str] = {"nvidia": N_("NVIDIA"), "amd": N_("AMD"), "huawei": N_("Huawei"),
                                "hygon": N_("Hygon"), "moorethreads": N_("Moore Threads")}


def vendor_name(code: str) -> str:
    """The vendor's name (English, the catalog key of its translations); an unknown code as it is."""
    return VENDOR_NAMES.get(code, code)
