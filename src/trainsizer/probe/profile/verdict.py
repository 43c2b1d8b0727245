"""The seed guide's 20 % rule on a step profile: storage-, network-, host- or compute-bound, with advice."""

from __future__ import annotations

from trainsizer.probe.profile.records import ProfileRules, StepProfile, Verdict, profile_rules


def verdict(profile: StepProfile, rules: ProfileRules | None = None) -> Verdict:
    """The seed guide's 20 % rule on the mean step: storage-, network-, host- or compute-bound, with advice.

    - storage-bound / network-bound: data loading the device waited for + communication not overlapped by
      compute exceed the threshold; the larger of the two names the bottleneck (seed guide, step 2).
    - host-bound (trainsizer's rule, profile_rules.yaml host_idle_max_fraction): otherwise, when the device
      is idle (or the host blocked) for more than its threshold with neither to explain it; Python overhead,
      launch latency or syncs set the pace, so faster storage, network or GPUs would not help.
    - compute-bound otherwise."""
    rules = rules or profile_rules()
    rule = rules.data_and_sync
    threshold = float(rule.value)
    host_threshold = float(rules.host_idle.value)
    memcpy_note = float(rules.memcpy_note.value)
    m = profile.mean
    data = m.fraction("data_loading")
    comm = m.fraction("communication")
    host_idle = m.fraction("idle") + m.fraction("host_wait")
    combined = data + comm
    shares = (f"data loading {data:.1%} + exposed communication {comm:.1%} = {combined:.1%} of the "
              f"{m.wall_s * 1e3:.1f} ms step")
    notes: list[str] = []
    if combined > threshold:
        name = "storage-bound" if data >= comm else "network-bound"
        reason = f"{shares} > {threshold:.0%}: {'storage (input pipeline)' if data >= comm else 'the network'} " \
                 "is the bottleneck (seed rule)"
        if min(data, comm) >= combined / 4:
            other = "communication" if data >= comm else "data loading"
            notes.append(f"{other} alone also takes {min(data, comm):.1%}: see the "
                         f"{'network' if data >= comm else 'storage'}-bound advice too")
    elif host_idle > host_threshold:
        name = "host-bound"
        where = "the device" if profile.trace_kind == "gpu" else "every profiled thread"
        reason = (f"{shares} <= {threshold:.0%}, but {where} is idle or waiting on the host {host_idle:.1%} of the "
                  f"step > {host_threshold:.0%} (trainsizer's rule): Python, launches or syncs set the pace")
    else:
        name = "compute-bound"
        reason = f"{shares} <= {threshold:.0%} and host idle {host_idle:.1%} <= {host_threshold:.0%}"
    if m.data_loading_total_s > 0 and data < 0.5 * m.data_loading_total_s / m.wall_s:
        notes.append(f"the DataLoader takes {m.data_loading_total_s / m.wall_s:.1%} of the step on the host, "
                     f"{data:.1%} exposed: the rest is hidden behind device work")
    if m.communication_total_s > 0:
        notes.append(f"communication {m.communication_total_s / m.wall_s:.1%} of the step in total, "
                     f"{comm:.1%} exposed (not overlapped by compute)")
    if m.fraction("memcpy") > memcpy_note:
        notes.append(f"host<->device copies take {m.fraction('memcpy'):.1%}: pin_memory=True and "
                     "non_blocking=True copies, keep tensors on the device")
    return Verdict(verdict=name, reason=reason, advice=list(rules.advice[name]), threshold_fraction=threshold,
                   rule_fraction=combined, data_loading_fraction=data, communication_fraction=comm,
                   host_idle_fraction=host_idle, host_idle_threshold_fraction=host_threshold,
                   source=" ".join(str(rule.source).split()), notes=notes + profile.notes)
