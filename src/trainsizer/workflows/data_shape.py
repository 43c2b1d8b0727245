"""``trainsizer data-shape FILE.jsonl``: a dataset's tokens per sample, counted with the model's tokenizer, as the
``data:`` block of a scenario (``trainsizer.scenario_data``) and a histogram.

Each line of the file is one sample, a JSON object: plain text (``{"text": ...}``), chat messages (``{"messages":
[{"role": ..., "content": ...}]}``, ShareGPT's ``{"conversations": [{"from": ..., "value": ...}]}``) or Alpaca's
``instruction`` / ``input`` / ``output``. Chat samples are counted through the tokenizer's chat template where it has
one (what LLaMA-Factory and TRL train on). The file is read within bounds: lines of at most
:data:`MAX_LINE_BYTES`, at most :data:`MAX_SAMPLES` samples (``--limit`` reads fewer); a line that is not such an
object stops the reading with its line number (exit 2).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypedDict

from trainsizer.errors import N_, InputError, excerpt

MAX_LINE_BYTES = 16 * 2**20  # one sample: 16 MiB (a 1M-token sample is about 4 MB of text)
MAX_SAMPLES = 5_000_000  # lines read at most (a tokenizer counts some 10^4 samples/s: minutes, not hours)
MAX_JSON_DEPTH = 64  # nesting a sample may have (json.loads recurses)
DEFAULT_BINS = 32
CHAT_FIELDS = ("messages", "conversations")
ALPACA_FIELDS = ("instruction", "input", "output")
Counter = Callable[[Any], int]


class HistogramBinJSON(TypedDict):
    up_to: int  # tokens per sample, at most
    samples: int


class DataBlockJSON(TypedDict):
    """A scenario's ``data:`` block (validation/FORMAT.md, "Extensions")."""

    packing: bool
    mean_tokens: float
    max_tokens: int
    length_histogram: list[HistogramBinJSON]


class LengthStatsJSON(TypedDict):
    """``trainsizer data-shape --json``."""

    samples: int
    mean_tokens: float
    p50_tokens: int
    p90_tokens: int
    p99_tokens: int
    max_tokens: int
    counted_with: str
    approximate: bool
    data: DataBlockJSON


@dataclass(frozen=True)
class LengthStats:
    """Tokens per sample of a dataset."""

    samples: int
    mean: float
    p50: int
    p90: int
    p99: int
    longest: int
    bins: tuple[tuple[int, int], ...]  # (up_to, samples), up_to ascending
    counted_with: str  # the tokenizer, or 'chars/N' for the approximation
    approximate: bool  # counted from characters, not with a tokenizer

    def data_block(self, packing: bool = False) -> DataBlockJSON:
        """The ``data:`` block of a scenario (validation/FORMAT.md, "Extensions")."""
        return {"packing": packing, "mean_tokens": round(self.mean, 1), "max_tokens": self.longest,
                "length_histogram": [{"up_to": up, "samples": n} for up, n in self.bins]}

    def to_dict(self) -> LengthStatsJSON:
        return {"samples": self.samples, "mean_tokens": round(self.mean, 1), "p50_tokens": self.p50,
                "p90_tokens": self.p90, "p99_tokens": self.p99, "max_tokens": self.longest,
                "counted_with": self.counted_with, "approximate": self.approximate,
                "data": self.data_block()}


def _depth_ok(line: str) -> bool:
    """Whether a line's brackets nest at most MAX_JSON_DEPTH deep (checked before json.loads recurses into it);
    brackets inside strings count too, so a legitimate line is refused only when its text is this deep."""
    depth = deepest = 0
    for ch in line:
        if ch in "[{":
            depth += 1
            deepest = max(deepest, depth)
            if deepest > MAX_JSON_DEPTH:
                return False
        elif ch in "]}":
            depth -= 1
    return True


def read_samples(path: Path, limit: int | None = None) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) of each non-empty line, within the bounds above."""
    cap = min(limit, MAX_SAMPLES) if limit else MAX_SAMPLES
    where = str(path)
    try:
        handle = path.open("rb")
    except OSError as exc:
        raise InputError(where, N_("cannot be read ({reason})"), reason=excerpt(exc.strerror or str(exc))) from None
    with handle:
        read = 0
        for number, raw in enumerate(iter(lambda: handle.readline(MAX_LINE_BYTES + 1), b""), start=1):
            if len(raw) > MAX_LINE_BYTES:
                raise InputError(f"{where}:{number}", N_("a line longer than {n} bytes; accepted: one JSON object "
                                                         "per line, at most {n} bytes"), n=MAX_LINE_BYTES)
            if not raw.strip():
                continue
            if read >= cap:
                if limit:
                    return
                raise InputError(where, N_("more than {n} samples; accepted: at most {n}, or --limit N to read the "
                                           "first N"), n=MAX_SAMPLES)
            yield number, _parse(raw, f"{where}:{number}")
            read += 1


def _parse(raw: bytes, where: str) -> dict[str, Any]:
    try:
        line = raw.decode("utf-8").lstrip("\ufeff")  # a byte-order mark some editors write first
        if not _depth_ok(line):
            raise ValueError("too deep")
        value = json.loads(line)
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise InputError(where, N_("not a JSON object; accepted: one JSON object per line (UTF-8)")) from None
    if not isinstance(value, dict):
        raise InputError(where, N_("not a JSON object; accepted: one JSON object per line (UTF-8)"))
    return value


def sample_text(sample: dict[str, Any], field: str | None, where: str) -> str | list[dict[str, str]]:
    """The sample's text, or its chat messages as [{role, content}]: from ``field``, else the first format found."""
    if field is None:
        field = next((f for f in (*CHAT_FIELDS, "text") if f in sample), None)
        if field is None and any(k in sample for k in ALPACA_FIELDS):
            parts = [sample.get(k) for k in ALPACA_FIELDS]
            if all(p is None or isinstance(p, str) for p in parts):
                return "\n".join(p for p in parts if p)
        if field is None:
            raise InputError(where, N_("no text, messages, conversations or instruction/output; accepted: one of "
                                       "them, or --field NAME"))
    value = sample.get(field)
    if isinstance(value, str):
        return value
    if isinstance(value, list) and value and all(isinstance(m, dict) for m in value):
        messages = [{"role": str(m.get("role", m.get("from", ""))), "content": m.get("content", m.get("value"))}
                    for m in value]
        if all(isinstance(m["content"], str) for m in messages):
            return messages  # type: ignore[return-value]
    raise InputError(where, N_("{field} is not text or a list of messages; accepted: a string, or a list of "
                               "{{role, content}}"), field=excerpt(field))


def tokenizer_counter(name: str) -> Counter:
    """Tokens of a sample as the tokenizer ``name`` (a folder or a Hugging Face id) makes them: chat messages through
    its chat template where it has one. transformers is an optional extra, imported here only; a missing package or
    tokenizer (an offline machine) is one InputError that names --chars-per-token."""
    try:
        from transformers import AutoTokenizer  # optional: pip install transformers
    except ImportError:
        raise InputError("--model", N_("counting tokens needs the transformers package (pip install transformers); "
                                       "or give --chars-per-token N for an approximation")) from None
    tokenizer = _load_tokenizer(AutoTokenizer, name)
    templated = bool(getattr(tokenizer, "chat_template", None))

    def count(sample: Any) -> int:
        if isinstance(sample, list):
            if templated:
                ids = tokenizer.apply_chat_template(sample, tokenize=True)
                ids = ids["input_ids"] if isinstance(ids, dict) or hasattr(ids, "keys") else ids
                return len(ids)
            sample = "\n".join(m["content"] for m in sample)
        return len(tokenizer(sample, add_special_tokens=True)["input_ids"])

    return count


def _load_tokenizer(auto: Any, name: str) -> Any:
    """The tokenizer from a folder or the local Hugging Face cache, else from the Hub (its retries take about a
    minute on an offline machine: HF_HUB_OFFLINE=1 skips them)."""
    import logging

    try:
        return auto.from_pretrained(name, local_files_only=True)
    except Exception:  # noqa: BLE001, S110  (not cached: the Hub is tried below)
        pass
    for logger in ("huggingface_hub", "transformers"):  # the Hub's retry lines: the one error line says it
        logging.getLogger(logger).setLevel(logging.ERROR)
    try:
        return auto.from_pretrained(name)
    except Exception as exc:  # noqa: BLE001  (offline, gated, missing files: transformers raises many kinds)
        reason = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise InputError("--tokenizer", N_("the tokenizer of {name} could not be loaded ({reason}); accepted: a "
                                           "folder with its tokenizer files (--tokenizer PATH), or --chars-per-token "
                                           "N for an approximation"), name=excerpt(name),
                         reason=excerpt(reason)) from None


def chars_counter(chars_per_token: float) -> Counter:
    """The approximation: characters / ``chars_per_token`` (messages: their contents' characters)."""
    def count(sample: Any) -> int:
        chars = sum(len(m["content"]) for m in sample) if isinstance(sample, list) else len(sample)
        return max(1, math.ceil(chars / chars_per_token))

    return count


def tokenizer_name(model: str | None, tokenizer: str | None) -> str:
    """The tokenizer to load: --tokenizer, else the model preset's Hugging Face repository, else --model as given
    (a Hugging Face id or a folder)."""
    if tokenizer:
        return tokenizer
    if not model:
        raise InputError("--model", N_("is required to count tokens; accepted: a model preset, a Hugging Face id, "
                                       "--tokenizer PATH or --chars-per-token N"))
    from trainsizer.models.catalog import find_preset, preset_entry

    found = find_preset(model)
    return str(preset_entry(found[0]).get("hf_repo") or model) if found else model


def _percentile(ordered: list[int], q: float) -> int:
    """The nearest-rank percentile of sorted values."""
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))]


def histogram(ordered: list[int], bins: int = DEFAULT_BINS) -> tuple[tuple[int, int], ...]:
    """``bins`` bins of equal width up to the longest sample (the last bin's up_to is the longest), empty bins
    left out."""
    longest = ordered[-1]
    width = max(1, math.ceil(longest / bins))
    counts: dict[int, int] = {}
    for n in ordered:
        up = min(longest, math.ceil(n / width) * width)
        counts[up] = counts.get(up, 0) + 1
    return tuple(sorted(counts.items()))


def length_stats(lengths: list[int], counted_with: str, approximate: bool, bins: int = DEFAULT_BINS) -> LengthStats:
    ordered = sorted(lengths)
    return LengthStats(len(ordered), sum(ordered) / len(ordered), _percentile(ordered, 0.5),
                       _percentile(ordered, 0.9), _percentile(ordered, 0.99), ordered[-1],
                       histogram(ordered, bins), counted_with, approximate)


def data_shape(path: Path, model: str | None = None, tokenizer: str | None = None, field: str | None = None,
               chars_per_token: float | None = None, limit: int | None = None,
               bins: int = DEFAULT_BINS) -> LengthStats:
    """Tokens per sample of the JSONL file at ``path`` (with the model's tokenizer, or characters / chars_per_token)."""
    if chars_per_token is not None and not (0 < chars_per_token <= 100 and math.isfinite(chars_per_token)):
        raise InputError("--chars-per-token", N_("{value} is out of range; accepted: a number > 0 and <= 100 "
                                                 "(about 4 for English, 1.5 for Chinese)"), value=chars_per_token)
    if not 1 <= bins <= 4096:
        raise InputError("--bins", N_("{value} is out of range; accepted: an integer from 1 to 4,096"), value=bins)
    if chars_per_token is not None:
        count, used = chars_counter(chars_per_token), f"chars/{chars_per_token:g}"
    else:
        used = tokenizer_name(model, tokenizer)
        count = tokenizer_counter(used)
    lengths = [count(sample_text(sample, field, f"{path}:{number}")) for number, sample in read_samples(path, limit)]
    if not lengths:
        raise InputError(str(path), N_("has no samples; accepted: a JSONL file, one JSON object per line"))
    return length_stats(lengths, used, chars_per_token is not None, bins)
