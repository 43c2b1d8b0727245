"""Small value types shared by the estimators."""

from __future__ import annotations

from dataclasses import dataclass

from trainsizer.messages import Message

GIB = 2**30


@dataclass(frozen=True)
class Component:
    """One part of the per-GPU memory: its bytes, its group and why it is there."""

    name: str
    bytes: float
    group: str  # weights | gradients | optimizer | activations | other
    why: Message

    @property
    def gib(self) -> float:
        return self.bytes / GIB
