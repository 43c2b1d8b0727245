"""The scaling view: throughput and efficiency against GPU count for each link option.

For every count (1, 2, 4, ...) and link option the planner finds the fastest layout that fits, within the chance
of running out of memory a plan's answer may have where one is given (``max_oom_risk``: the plan's
--max-oom-risk, as ``plan.search.risk_limits`` keeps it), with the job's global batch fixed, so the curve shows
where added GPUs stop paying off (scaling efficiency ``tokens/s(n) / (n * tokens/s per GPU at the smallest
count)``) or slow the job down.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from trainsizer.hardware.catalog import Catalog, default_catalog
from trainsizer.messages import Message, msg
from trainsizer.models.architecture import Architecture
from trainsizer.plan.search import Constraints, _counts, _inter_links, fastest_within, plan
from trainsizer.scenario import Scenario

if TYPE_CHECKING:  # the JSON's types, for annotations
    from trainsizer.plan.option_json import ParallelJSON


@dataclass
class ScalePoint:
    gpus: int
    tokens_per_s: float | None  # None: nothing fits at this count
    efficiency: float | None
    layout: ParallelJSON | None
    dominant: str | None


@dataclass
class ScaleCurve:
    intra_node: str
    inter_node: str | None
    points: list[ScalePoint]
    data_parallel_only: bool = False

    @property
    def label(self) -> Message:
        links = self.intra_node + (f" + {self.inter_node}" if self.inter_node else "")
        return msg("scale.data_parallel_only" if self.data_parallel_only else "scale.best_layout", links=links)

    def verdicts(self) -> list[Message]:
        out, prev = [], None
        for pt in self.points:
            if pt.tokens_per_s is None:
                continue
            if prev and pt.tokens_per_s < prev.tokens_per_s:
                out.append(msg("scale.slower", clause=self.label, n=pt.gpus, m=prev.gpus, a=pt.tokens_per_s,
                               b=prev.tokens_per_s, step=pt.dominant))
            elif pt.efficiency is not None and pt.efficiency < 0.5 and (prev is None or (prev.efficiency or 1) >= 0.5):
                out.append(msg("scale.efficiency_drop", clause=self.label, n=pt.gpus, pct=pt.efficiency,
                               step=pt.dominant))
            prev = pt
        return out

    def to_dict(self) -> dict[str, Any]:
        return {"intra_node": self.intra_node, "inter_node": self.inter_node, "label": self.label,
                "data_parallel_only": self.data_parallel_only,
                "points": [pt.__dict__ for pt in self.points], "verdicts": self.verdicts()}


def link_options(gpu_id: str, catalog: Catalog, max_gpus: int = 1 << 30,
                 gpus_per_node: int | None = None) -> list[tuple[str, str | None]]:
    gpu = catalog.accelerator(gpu_id, "--gpu")
    intra = [gpu.default_intra_node or "pcie4"]
    pcie = f"pcie{gpu.pcie_gen or 4}"
    if pcie not in intra and pcie in catalog.links:
        intra.append(pcie)  # the same GPUs in a PCIe-only server
    nets: list[str | None] = list(_inter_links(gpu))
    if "eth-100" in catalog.links:
        nets.append("eth-100")
    if max_gpus <= (gpus_per_node or 8):
        nets = nets[:1]  # one node: the network between nodes plays no part
    return [(i, n) for i in intra for n in nets]


def scale(job: Scenario, arch: Architecture, gpu_id: str, max_gpus: int = 64, catalog: Catalog | None = None,
          gpus_per_node: int | None = None, max_oom_risk: float | None = None) -> list[ScaleCurve]:
    """Each link option's curve (module docstring); a count whose layouts all risk running out of memory beyond
    ``max_oom_risk`` has no point, as a plan would not recommend them."""
    cat = catalog or default_catalog()
    curves = []
    for (intra, inter), dp_only in [(links, dp_only) for links in link_options(gpu_id, cat, max_gpus, gpus_per_node)
                                    for dp_only in (False, True)]:
        points: list[ScalePoint] = []
        base_per_gpu = None
        for count in _counts(max_gpus):
            cons = Constraints((gpu_id,), count, gpus_per_node, None, 1, exact_gpus=count, intra_node=intra,
                               inter_node=inter, data_parallel_only=dp_only, max_oom_risk=max_oom_risk)
            res = plan(job, arch, cons, cat, with_suggestions=False)
            best = fastest_within(res.options, max_oom_risk)
            if best is None:
                points.append(ScalePoint(count, None, None, None, None))
                continue
            tps = best.tokens_per_s
            if base_per_gpu is None:
                base_per_gpu = tps / count
            points.append(ScalePoint(count, tps, tps / (count * base_per_gpu), best.parallel_dict(),
                                     best.performance.dominant))
        curves.append(ScaleCurve(intra, inter, points, dp_only))
    return curves
