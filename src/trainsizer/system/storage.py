"""Shared storage capacity and throughput, local NVMe, and the seed's throughput rule checked.

Read rate = tokens/s x bytes per token (x a safety factor for shuffling, restarts, evaluation).
Checkpoint size = what a resumable checkpoint holds: 16-bit weights plus, for full training, the
fp32 masters and optimizer moments (the same bytes as the model states of the memory estimate).
Write burst = one checkpoint within ``checkpoint_stall_fraction`` of the interval (CheckFreq,
Mohan et al. FAST'21, on keeping checkpoint stalls small).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from trainsizer.system.rules import sizing_rules

TB = 1e12


@dataclass(frozen=True)
class StorageSizing:
    dataset_tb: float
    checkpoint_tb: float
    capacity_tb: float
    read_gbps: float  # GB/s sustained
    checkpoint_write_gbps: float
    local_nvme_tb_per_node: float
    seed_rule_gbps: float
    seed_rule_verdict: str

    def to_dict(self) -> dict[str, Any]:
        return {"dataset_tb": round(self.dataset_tb, 3), "checkpoint_tb": round(self.checkpoint_tb, 3),
                "shared_capacity_tb": round(self.capacity_tb, 2), "read_gbps": round(self.read_gbps, 3),
                "checkpoint_write_gbps": round(self.checkpoint_write_gbps, 2),
                "local_nvme_tb_per_node": self.local_nvme_tb_per_node,
                "seed_rule_gbps": round(self.seed_rule_gbps, 1), "seed_rule_verdict": self.seed_rule_verdict}


def size_storage(params: int, trainable: int, vocab: int, tokens: float | None, tokens_per_s: float,
                 full_state_bytes_per_param: float, total_peak_tflops: float, nodes: int) -> StorageSizing:
    r = sizing_rules()["storage"]
    per_token = r["tokenised_bytes_per_token_small_vocab"] if vocab < 65536 else r["tokenised_bytes_per_token"]
    dataset = (tokens or 0.0) * (per_token + r["raw_text_bytes_per_token"]) / TB
    # resumable checkpoint: all weights (16-bit) + states of what is trained
    checkpoint = (params * 2 + trainable * full_state_bytes_per_param) / TB
    base_model = params * 2 / TB
    capacity = (dataset + checkpoint * r["checkpoints_kept"] + base_model) * r["capacity_headroom"]
    read = tokens_per_s * per_token * r["read_safety_factor"] / 1e9
    write = checkpoint * TB / (r["checkpoint_interval_s"] * r["checkpoint_stall_fraction"]) / 1e9
    local = checkpoint / max(1, nodes) + dataset / max(1, nodes) * 0.0  # shards cached locally, if wanted
    local_drive = next((d for d in r["local_nvme_drive_tb"] if d >= local * 2), None)
    local_tb = local_drive or math.ceil(local * 2 / r["local_nvme_drive_tb"][-1]) * r["local_nvme_drive_tb"][-1]
    seed = total_peak_tflops * r["seed_rule_gb_per_s_per_tflops"]
    verdict = (f"seed rule: {total_peak_tflops:,.0f} TFLOPS x 32 GB/s per TFLOPS = {seed:,.0f} GB/s; "
               f"dimensionally it ties bytes to FLOPs, and here it is {seed / max(read, 1e-12):.1e} times the "
               f"{read * 1000:.2f} MB/s the GPUs actually read (tokens/s x {per_token} B/token x "
               f"{r['read_safety_factor']:g}). Checkpoint bursts ({write:.1f} GB/s) size the storage, not the rule.")
    return StorageSizing(dataset, checkpoint, capacity, read, write, local_tb, seed, verdict)
