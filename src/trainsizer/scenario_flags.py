"""The command line's scenario flags, generated from the typed scenario (``trainsizer.scenario``): each flag names a
field path; its value type, accepted values and bounds come from that field, so what a field accepts is written
once (the pydantic model) and the flag's ``--help`` cannot drift from it. The scenario's own validation checks a
flag's value exactly as it checks the same key in a YAML file (one message naming the field).

Typer reads a command's options from its signature (typer.utils.get_params_from_function:
https://github.com/fastapi/typer/blob/0.12.5/typer/utils.py); :func:`with_scenario_flags` gives a command the
generated options and hands it their values as ``{field path: value}``."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any, Literal, get_args, get_origin

import typer


@dataclass(frozen=True, slots=True)
class ScenarioFlag:
    """One ``--flag`` of a scenario field: its field path, the parameter's name in the command, its option names
    (default ``--<key with dashes>``) and a short help that the field's accepted values follow."""

    path: str
    param: str = ""
    names: tuple[str, ...] = ()
    help: str = ""

    @property
    def name(self) -> str:
        return self.param or self.path.rpartition(".")[2]

    @property
    def option_names(self) -> tuple[str, ...]:
        return self.names or ("--" + self.path.rpartition(".")[2].replace("_", "-"),)


# The fields a user sets on the command line, in --help order (validation/FORMAT.md describes every key).
ESTIMATE_FLAGS: tuple[ScenarioFlag, ...] = (
    ScenarioFlag("model", help="Model preset id, or a Hugging Face config.json path."),
    ScenarioFlag("training.method"),
    ScenarioFlag("training.precision"),
    ScenarioFlag("training.optimizer"),
    ScenarioFlag("training.micro_batch_size", names=("--micro-batch-size", "--mbs")),
    ScenarioFlag("training.seq_len"),
    ScenarioFlag("training.global_batch_size"),
    ScenarioFlag("training.activation_checkpointing", param="checkpointing", names=("--checkpointing",)),
    ScenarioFlag("training.attention"),
    ScenarioFlag("training.lora.rank", param="lora_rank", names=("--lora-rank",)),
    ScenarioFlag("training.lora.alpha", param="lora_alpha", names=("--lora-alpha",)),
    ScenarioFlag("training.lora.targets", param="lora_targets", names=("--lora-targets",),
                 help="Comma-separated module names, or all-linear."),
    ScenarioFlag("training.quantization", help="With method qlora."),
    ScenarioFlag("training.loss", help="Cross-entropy kind."),
    ScenarioFlag("training.liger_kernel", param="liger_kernel", names=("--liger-kernel/--no-liger-kernel",),
                 help="The run turns on Liger Kernel (its fused linear cross-entropy: no whole logits)."),
    ScenarioFlag("training.document_tokens", help="Packed sequences: tokens per document, each attending only to "
                                                  "itself."),
    ScenarioFlag("training.compile", param="compile_model", names=("--compile/--no-compile",),
                 help="The model runs under torch.compile."),
    ScenarioFlag("parallel.gpus", help="Total GPUs."),
    ScenarioFlag("parallel.tp"),
    ScenarioFlag("parallel.pp"),
    ScenarioFlag("parallel.cp"),
    ScenarioFlag("parallel.virtual_pp"),
    ScenarioFlag("parallel.sequence_parallel", names=("--sequence-parallel/--no-sequence-parallel",)),
    ScenarioFlag("parallel.tp_comm_overlap", names=("--tp-comm-overlap/--no-tp-comm-overlap",),
                 help="Tensor-parallel collectives pipelined with the GEMMs (Megatron --tp-comm-overlap, MindSpeed "
                      "--use-ascend-mc2)."),
    ScenarioFlag("parallel.zero", help="ZeRO stage (FSDP full shard = 3)."),
    ScenarioFlag("parallel.offload"),
    ScenarioFlag("parallel.distributed_optimizer", names=("--distributed-optimizer/--no-distributed-optimizer",),
                 help="Megatron's distributed optimizer."),
    ScenarioFlag("parallel.ep", help="Expert parallelism (MoE)."),
    ScenarioFlag("training.optimizer_in_backward", names=("--optimizer-in-backward/--no-optimizer-in-backward",)),
    ScenarioFlag("training.tokens", help="Total training tokens."),
    ScenarioFlag("data.packing", names=("--packing/--no-packing",), help="Samples packed into seq_len sequences."),
    ScenarioFlag("data.mean_tokens", help="Mean tokens per sample (trainsizer data-shape); with --max-tokens."),
    ScenarioFlag("data.max_tokens", help="Tokens of the longest sample: memory takes it, speed the mean."),
    ScenarioFlag("hardware.gpu", help="GPU catalog id, e.g. rtx-4090-24gb."),
    ScenarioFlag("hardware.gpus_per_node"),
    ScenarioFlag("hardware.intra_node", help="Link id inside a node, e.g. nvlink4."),
    ScenarioFlag("hardware.inter_node", help="Link id between nodes, e.g. ib-ndr-400."),
)


FREE_TEXT = ("model", "hardware.gpu", "training.lora.targets")  # an id or a path; a list of module names


def _literal_values(path: str) -> tuple[set[Any], list[Any]]:
    """The plain types of a field and the values of its closed set (empty where it has none)."""
    from trainsizer.scenario import SECTION_MODELS, Scenario, flat_types  # the models: only when options are built

    parent, _, key = path.rpartition(".")
    types = flat_types(SECTION_MODELS.get(parent, Scenario).model_fields[key].annotation) - {type(None)}
    return types, [v for t in types if get_origin(t) is Literal for v in get_args(t)]


def _value_type(path: str) -> type:
    """The command-line type of a field: bool, int, float or str (a closed set of strings, an id or a list typed
    as text)."""
    if path in FREE_TEXT:
        return str
    types, values = _literal_values(path)
    for kind in (bool, int, float):
        if kind in types or (values and all(type(v) is kind for v in values)):
            return kind
    return str


def _help(flag: ScenarioFlag) -> str:
    """The flag's help and the field's accepted values ('a | b | c' for a closed set, else its bounds)."""
    if flag.path in FREE_TEXT or _value_type(flag.path) is bool:
        return flag.help
    choices = [str(v) for v in _literal_values(flag.path)[1]]
    if choices:
        return f"{flag.help} One of {' | '.join(choices)}.".strip() if flag.help else " | ".join(choices)
    from trainsizer.scenario import accepted

    shown = accepted(flag.path)
    return f"{flag.help} Accepts {shown}.".strip() if shown != "a string" else flag.help


def option_parameters(flags: tuple[ScenarioFlag, ...]) -> list[inspect.Parameter]:
    """The keyword parameters (typer options, default None: the scenario's own value) of ``flags``."""
    return [inspect.Parameter(f.name, inspect.Parameter.KEYWORD_ONLY, default=None,
                              annotation=Annotated[_value_type(f.path) | None,
                                                   typer.Option(*f.option_names, help=_help(f))])
            for f in flags]


def flag_values(flags: tuple[ScenarioFlag, ...], values: dict[str, Any]) -> dict[str, Any]:
    """``{field path: value}`` of the flags given (None: not given); LoRA targets split at commas."""
    out: dict[str, Any] = {}
    for f in flags:
        value = values.get(f.name)
        if f.path == "training.lora.targets" and value and value != "all-linear":
            value = [t.strip() for t in value.split(",") if t.strip()]
        out[f.path] = value
    return out


def with_scenario_flags(flags: tuple[ScenarioFlag, ...]) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """A command with ``flags`` as its options after its own, called with their values as ``scenario_flags``
    (``{field path: value}``). The command is returned as it is; the function typer reads, with the generated
    options, is built when the command is (``command.with_generated_options()``, cli_groups.typer_callback), so
    that no other command imports the scenario's models for them."""

    def decorate(command: Callable[..., Any]) -> Callable[..., Any]:
        command.with_generated_options = functools.cache(  # type: ignore[attr-defined]
            lambda: _with_options(command, flags))
        return command

    return decorate


def _with_options(command: Callable[..., Any], flags: tuple[ScenarioFlag, ...]) -> Callable[..., Any]:
    own = [p for p in inspect.signature(command).parameters.values() if p.name != "scenario_flags"]
    generated = option_parameters(flags)
    names = {p.name for p in generated}

    @functools.wraps(command)
    def run(**kwargs: Any) -> Any:
        given = {k: kwargs.pop(k) for k in list(kwargs) if k in names}
        return command(scenario_flags=flag_values(flags, given), **kwargs)

    own = [p.replace(kind=inspect.Parameter.KEYWORD_ONLY) for p in own]
    params = own[:1] + generated + own[1:]  # the command's argument, the scenario's flags, its other options
    run.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    run.__annotations__ = {p.name: p.annotation for p in params}
    del run.__wrapped__  # typer reads this signature, not the command's
    del run.with_generated_options  # copied by functools.wraps (the function's __dict__)
    return run
