"""Shared storage capacity and throughput, local NVMe, and the seed's throughput rule checked.

Read rate = tokens/s x bytes per token (x a safety factor for shuffling, restarts, evaluation).
Checkpoint size = what a resumable checkpoint holds: 16-bit weights plus, for full training, the
fp32 masters and optimizer moments (the same bytes as the model states of the memory estimate).
Write burst = one checkpoint within ``checkpoint_stall_fraction`` of the interval (CheckFreq,
Mohan et al. FAST'21, on keeping checkpoint stalls small).

Random I/O (IOPS) need = the larger of
- data reads, worst case a small-file dataset (one file per sample, random order): samples/s x
  (metadata + data requests per file) x the read safety factor; samples/s = tokens/s / seq_len;
- checkpoint bursts: write GB/s / 1 MiB requests + per-rank file creation (metadata) within the stall window.
They do not add: a synchronous checkpoint stalls the reads. The seed's "SSD clusters of a million IOPS or
more at the 100B scale" is shown beside, with what NVMe drives are rated for (sizing.yaml storage.iops).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING

from trainsizer.messages import Message, clauses, msg
from trainsizer.system.rules import StorageRules, storage_rules

if TYPE_CHECKING:  # the JSON's types, for annotations
    from trainsizer.plan.option_json import StorageJSON

TB = 1e12


@dataclass(frozen=True)
class _Said:
    """The figures the storage sizing's two sentences quote (made when read: a plan sizes ~100 options and shows a
    few dozen)."""

    total_peak_tflops: float
    per_token: float
    params: int
    samples_per_s: float
    per_file: int
    gpus: int
    rules: StorageRules


@dataclass(frozen=True)
class StorageSizing:
    """Shared and local storage: dataset, checkpoints, capacity and the read and write rates they need."""

    dataset_tb: float
    checkpoint_tb: float
    capacity_tb: float
    read_gbps: float  # GB/s sustained
    checkpoint_write_gbps: float
    local_nvme_tb_per_node: float
    seed_rule_gbps: float
    said: _Said
    iops_needed: float = 0.0  # random I/O operations per second the job needs (see module docstring)
    iops_breakdown: dict[str, float] = field(default_factory=dict)

    @cached_property
    def seed_rule_verdict(self) -> Message:
        """The seed's throughput rule beside the read rate sized here."""
        said, r = self.said, self.said.rules
        return clauses([msg("system.storage_seed_rule", tflops=said.total_peak_tflops, gbps=self.seed_rule_gbps),
                        msg("system.storage_seed_rule_off", x=self.seed_rule_gbps / max(self.read_gbps, 1e-12),
                            mbps=self.read_gbps * 1000, b=said.per_token, k=r.read_safety_factor,
                            write=self.checkpoint_write_gbps)])

    @cached_property
    def iops_note(self) -> Message:
        """The random I/O need explained: small-file reads vs checkpoint bursts, what drives deliver, the seed's
        rule."""
        said, r = self.said, self.said.rules
        q = r.iops
        drive = q.nvme_random_read_iops_per_drive
        delivered = q.minimum_config_drives * drive * q.shared_fs_delivered_fraction
        seed_applies = said.params >= q.seed_rule_min_params
        seed = msg("system.iops_seed_applies" if seed_applies else "system.iops_seed_not_this_job",
                   iops=q.seed_rule_iops, b=said.params / 1e9)
        return clauses([msg("system.iops_need", need=self.iops_needed, data=self.iops_breakdown["small_file_reads"],
                            samples=said.samples_per_s, per_file=said.per_file, k=r.read_safety_factor,
                            ckpt=self.iops_breakdown["checkpoint_bursts"], gbps=self.checkpoint_write_gbps,
                            ranks=said.gpus, files=q.checkpoint_files_per_rank),
                        msg("system.iops_drive", drive=drive, drives=q.minimum_config_drives,
                            pct=q.shared_fs_delivered_fraction, delivered=delivered), seed])

    def to_dict(self) -> StorageJSON:
        return {"dataset_tb": round(self.dataset_tb, 3), "checkpoint_tb": round(self.checkpoint_tb, 3),
                "shared_capacity_tb": round(self.capacity_tb, 2), "read_gbps": round(self.read_gbps, 3),
                "checkpoint_write_gbps": round(self.checkpoint_write_gbps, 2),
                "local_nvme_tb_per_node": self.local_nvme_tb_per_node,
                "seed_rule_gbps": round(self.seed_rule_gbps, 1), "seed_rule_verdict": self.seed_rule_verdict,
                "iops_needed": round(self.iops_needed), "iops_note": self.iops_note,
                "iops_breakdown": {k: round(v) for k, v in self.iops_breakdown.items()}}


def size_storage(params: int, trainable: int, vocab: int, tokens: float | None, tokens_per_s: float,
                 full_state_bytes_per_param: float, total_peak_tflops: float, nodes: int,
                 seq_len: int | None = None, gpus: int = 1) -> StorageSizing:
    r = storage_rules()
    per_token = r.tokenised_bytes_per_token_small_vocab if vocab < 65536 else r.tokenised_bytes_per_token
    dataset = (tokens or 0.0) * (per_token + r.raw_text_bytes_per_token) / TB
    # resumable checkpoint: all weights (16-bit) + states of what is trained
    checkpoint = (params * 2 + trainable * full_state_bytes_per_param) / TB
    base_model = params * 2 / TB
    capacity = (dataset + checkpoint * r.checkpoints_kept + base_model) * r.capacity_headroom
    read = tokens_per_s * per_token * r.read_safety_factor / 1e9
    write = checkpoint * TB / (r.checkpoint_interval_s * r.checkpoint_stall_fraction) / 1e9
    local = checkpoint / max(1, nodes) + dataset / max(1, nodes) * 0.0  # shards cached locally, if wanted
    local_drive = next((d for d in r.local_nvme_drive_tb if d >= local * 2), None)
    local_tb = local_drive or math.ceil(local * 2 / r.local_nvme_drive_tb[-1]) * r.local_nvme_drive_tb[-1]
    seed = total_peak_tflops * r.seed_rule_gb_per_s_per_tflops
    iops, samples_per_s, per_file, parts = _iops(tokens_per_s, seq_len, write, gpus, r)
    said = _Said(total_peak_tflops, per_token, params, samples_per_s, per_file, gpus, r)
    return StorageSizing(dataset, checkpoint, capacity, read, write, local_tb, seed, said, iops, parts)


def _iops(tokens_per_s: float, seq_len: int | None, write_gbps: float, gpus: int,
          r: StorageRules) -> tuple[float, float, int, dict[str, float]]:
    """Random I/O need: small-file data reads vs checkpoint bursts (module docstring): (need, samples per second,
    I/O requests per sample file, the two needs)."""
    q = r.iops
    sample_bytes = (seq_len or 0) * r.raw_text_bytes_per_token
    per_file = q.ios_per_small_file - 1 + max(1, math.ceil(sample_bytes / q.small_file_read_io_bytes))
    samples_per_s = tokens_per_s / seq_len if seq_len else 0.0
    data = samples_per_s * per_file * r.read_safety_factor
    stall_s = r.checkpoint_interval_s * r.checkpoint_stall_fraction
    ckpt = write_gbps * 1e9 / q.large_io_bytes + gpus * q.checkpoint_files_per_rank * q.metadata_ios_per_file / stall_s
    return max(data, ckpt), samples_per_s, per_file, {"small_file_reads": data, "checkpoint_bursts": ckpt}
