"""Hardware probes: checks that run on the real machine (memory, step profile, interconnect, burn-in)."""

from __future__ import annotations

PROBE_PACKAGES = ("torch", "transformers", "peft")


def require_packages(what: str, packages: tuple[str, ...] = PROBE_PACKAGES, hint: str = "") -> None:
    """One clear line instead of an ImportError when the [probe] extra is missing."""
    import importlib.util

    from trainsizer.errors import InputError

    missing = [m for m in packages if importlib.util.find_spec(m) is None]
    if missing:
        extra = f" ({hint})" if hint else ""
        raise InputError(what, f"needs {', '.join(missing)}: pip install -e '.[probe]'{extra}")


def resolve_device(device: str) -> str:
    """auto | cuda | cpu -> cuda or cpu; cuda without a GPU is a user mistake."""
    from trainsizer.errors import InputError

    if device not in ("auto", "cuda", "cpu"):
        raise InputError("--device", f"{device!r} is not accepted; accepted: auto, cuda, cpu")
    if device == "cpu":
        return "cpu"
    import torch

    if torch.cuda.is_available():
        return "cuda"
    if device == "cuda":
        raise InputError("--device", "cuda requested but torch sees no CUDA GPU; accepted here: auto, cpu")
    return "cpu"
