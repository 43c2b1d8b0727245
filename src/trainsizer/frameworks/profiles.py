"""Loading the framework profiles and applying one to a scenario (``trainsizer.frameworks``)."""

# Annotations stay objects here (no `from __future__ import annotations`): pydantic reads each field's type as
# is, without compiling its text into a ForwardRef first (~0.1 ms a model class, at every command's import).
from dataclasses import dataclass
from functools import cache
from typing import Any, Literal, NotRequired, TypedDict

from pydantic import BaseModel, ConfigDict, Field, model_validator

from trainsizer.datafiles import packaged_yaml
from trainsizer.errors import N_, InputError
from trainsizer.frameworks.parallelism import Parallelism, admits, refusal
from trainsizer.hardware.vendors import vendor_name
from trainsizer.input_checks import IsoDate, checked_once, parse_model
from trainsizer.models.catalog import resolve_model
from trainsizer.scenario import Method, Scenario

PACKAGE = "trainsizer.frameworks"
# the keys that say how a framework runs the model, not what the user trains: a profile may set only these, and the
# user's view of a case (validate --view user) leaves them to the profile
INTERNALS = ("training.zero_grad", "training.activation_kernel", "training.autocast", "training.loss",
             "training.quantized_inputs", "training.unquantized_dtype", "parallel.sharded_weights",
             "parallel.accumulation_sync", "parallel.overlap_grad_reduce", "parallel.grad_reduce_dtype",
             "parallel.zero_grad_sync", "parallel.checkpoint_loading")
BACKENDS = ("none", "deepspeed", "fsdp")


class Setting(BaseModel):
    """One default of a framework: an internals key, its value, when it holds, and the source line it is read from."""

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)
    key: str
    value: Any
    when: dict[str, Any] = Field(default_factory=dict)
    source: str = Field(min_length=1)
    quote: str = Field(min_length=1)

    def holds(self, scenario: Scenario, backend: str) -> bool:
        """Whether the setting's conditions (backend, zero, precision, method, compile, and the model's MLP
        activation as its config names it) hold for ``scenario``."""
        facts = {"backend": backend, "zero": scenario.parallel.zero, "precision": scenario.training.precision,
                 "method": scenario.training.method, "compile": scenario.training.compile}
        for name, accepted in self.when.items():
            allowed = accepted if isinstance(accepted, list) else [accepted]
            fact = resolve_model(scenario.model).activation if name == "activation" else facts.get(name)
            if fact not in allowed:
                return False
        return True


class Unset(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)
    key: str
    looked: str


class ExpertParallel(BaseModel):
    """Whether a framework runs expert parallelism (MoE experts split over ranks), and the source line that says so
    (or ``assumed: <why>`` where the source was not read)."""

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)
    runs: bool
    source: str = Field(min_length=1)
    quote: str = Field(min_length=1)


class MethodRun(BaseModel):
    """A training method (``training.method``) a framework release runs, whether it runs it with expert parallelism
    (stated in a profile whose ``expert_parallel.runs``), and the source line that says so (``assumed: <why>`` where
    the source was not read)."""

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)
    method: Method
    expert_parallel: bool | None = None
    source: str = Field(min_length=1)
    quote: str = Field(min_length=1)
    as_of: IsoDate


class Profile(BaseModel):
    """A framework family's profile file."""

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)
    family: str
    name: str
    version: str
    source: str = Field(min_length=1)
    as_of: IsoDate
    zero_backend: str | None = None  # the backend a ZeRO stage > 0 implies when the name gives none
    backends: list[str] = Field(default_factory=list)
    settings: list[Setting] = Field(default_factory=list)
    unset: list[Unset] = Field(default_factory=list)
    expert_parallel: ExpertParallel
    parallelism: Parallelism = Field(default_factory=Parallelism)
    methods: list[MethodRun] = Field(min_length=1)

    def runs(self, method: str) -> MethodRun | None:
        """The profile's entry for ``method``, None where the framework does not run it."""
        return next((m for m in self.methods if m.method == method), None)

    @model_validator(mode="after")
    def _methods_state_expert_parallelism(self) -> "Profile":
        named = [m.method for m in self.methods]
        if len(set(named)) != len(named):
            raise ValueError(f"methods: each method once ({', '.join(named)})")
        for m in self.methods:
            if self.expert_parallel.runs and m.expert_parallel is None:
                raise ValueError(f"methods: {m.method}: expert_parallel (true or false) is stated where the "
                                 "framework runs expert parallelism")
            if not self.expert_parallel.runs and m.expert_parallel:
                raise ValueError(f"methods: {m.method}: expert_parallel true under expert_parallel.runs false")
        return self


def _index() -> dict[str, Any]:
    return packaged_yaml(PACKAGE, "index.yaml")


def families() -> list[str]:
    """The framework families with a shipped profile."""
    return list(_index()["families"])


def assumed(method: str) -> str:
    """The framework family assumed for a method when a scenario names none (``index.yaml``)."""
    return str(_index()["assumed"][method])


@cache
def load_profile(family: str) -> Profile:
    """The shipped profile of ``family`` (checked against the internals keys; callers must not mutate it). Every
    shipped profile is checked once and kept in the user's cache folder (``input_checks.checked_once``: keyed on
    the profile files and the code that checks them), else checked here."""
    shipped = _shipped_profiles()
    return shipped[family] if shipped is not None and family in shipped else _checked_profile(family)


@cache
def _shipped_profiles() -> dict[str, Profile] | None:
    # parallelism.py: the models a profile's ``parallelism`` is checked by, beside this module's
    files = ["index.yaml", *(f"{family}.yaml" for family in families()), "parallelism.py"]
    return checked_once("frameworks", PACKAGE, files, __file__,
                        lambda: {family: _checked_profile(family) for family in families()})


def _checked_profile(family: str) -> Profile:
    profile = parse_model(Profile, packaged_yaml(PACKAGE, f"{family}.yaml"), f"frameworks/{family}.yaml")
    for s in profile.settings:
        if s.key not in INTERNALS:
            raise InputError(f"frameworks/{family}.yaml: {s.key}", N_("{value!r} is not accepted; accepted: "
                                                                      "{accepted}"), value=s.key,
                             accepted=", ".join(INTERNALS))
    return profile


def _family(framework: str | None, method: str) -> str:
    return parse_name(framework)[0] if framework else assumed(method)


def runs_method(framework: str | None, method: str) -> bool:
    """Whether ``framework`` (a name as ``training.framework`` takes it) runs ``method``, as its profile's ``methods``
    say; with none named, True: the one assumed for a method runs it."""
    return framework is None or load_profile(_family(framework, method)).runs(method) is not None


def method_families(method: str) -> list[str]:
    """The framework families whose profile runs ``method``."""
    return [f for f in families() if load_profile(f).runs(method) is not None]


def runs_expert_parallel(framework: str | None, method: str) -> bool:
    """Whether ``framework`` (a name as ``training.framework`` takes it; None: the one assumed for ``method``) runs
    ``method`` with expert parallelism, as its profile says."""
    run = load_profile(_family(framework, method)).runs(method)
    return bool(run and run.expert_parallel)


def expert_parallel_families(method: str) -> list[str]:
    """The framework families whose profile runs ``method`` with expert parallelism."""
    return [f for f in families() if runs_expert_parallel(f, method)]


def check_method(scenario: Scenario, use: "FrameworkUse") -> None:
    """Refuse a ``training.method`` the named framework's profile does not run (an assumed one runs its method)."""
    method = scenario.training.method
    if not use.assumed and load_profile(use.family).runs(method) is None:
        raise InputError("training.method", N_("{method} is not a method {framework} runs (training.framework); "
                                               "accepted: training.method one of {methods}, or training.framework "
                                               "one of {frameworks}"),
                         method=method, framework=use.framework,
                         methods=", ".join(m.method for m in load_profile(use.family).methods),
                         frameworks=", ".join(method_families(method)))


def check_expert_parallel(scenario: Scenario, use: "FrameworkUse") -> None:
    """Refuse ``parallel.ep > 1`` under a named framework whose profile runs no expert parallelism with the
    scenario's method. An assumed one is not refused: a stated expert-parallel size says the user runs a framework
    that has it, not the assumed one."""
    method = scenario.training.method
    if scenario.parallel.ep > 1 and not use.assumed and not runs_expert_parallel(use.framework, method):
        raise InputError("parallel.ep", N_("{ep} needs a framework that runs expert parallelism with method "
                                           "{method}, and {framework} does not; accepted: 1, or training.framework "
                                           "one of {frameworks}"),
                         ep=scenario.parallel.ep, method=method, framework=use.framework,
                         frameworks=", ".join(expert_parallel_families(method)))


def parallelism_of(framework: str | None, method: str) -> Parallelism | None:
    """The parallel layouts a named ``framework`` runs (its profile's ``parallelism``); None where none is named: the
    one assumed for a method restricts no layout (a stated layout says the user runs a framework that has it)."""
    return load_profile(_family(framework, method)).parallelism if framework else None


# ``--gpu`` / ``hardware.gpu`` under a framework that does not train on the GPU's vendor: what it says per field
_VENDOR_REFUSED = N_("{value} is a {vendor} accelerator, which {framework} does not train on (training.framework); "
                    "accepted: a GPU from {accepted}, or training.framework one of {frameworks}")
_LAYOUT_REFUSED = N_("{value} is not a layout {framework} runs (training.framework); accepted: {accepted}, or "
                     "training.framework one of {frameworks}")
# the same where no framework's profile says it runs it
_VENDOR_REFUSED_ONLY = N_("{value} is a {vendor} accelerator, which {framework} does not train on "
                         "(training.framework); accepted: a GPU from {accepted}")
_LAYOUT_REFUSED_ONLY = N_("{value} is not a layout {framework} runs (training.framework); accepted: {accepted}")


def check_parallelism(scenario: Scenario, use: "FrameworkUse", vendor: str | None) -> None:
    """Refuse a layout field (or the GPU's ``vendor``) the named framework's profile says its release does not run;
    an assumed one is not refused."""
    if use.assumed:
        return
    refused = refusal(load_profile(use.family).parallelism, scenario.parallel, vendor)
    if refused is None:
        return
    method = scenario.training.method
    others = [f for f in method_families(method)
              if admits(load_profile(f).parallelism, scenario.parallel, vendor, refused.field)]
    if refused.field == "hardware.gpu":
        raise gpu_refused(refused.field, str(scenario.hardware.gpu), refused.value, use.framework,
                          refused.accepted.split(", "), others)
    raise InputError(refused.field, _LAYOUT_REFUSED if others else _LAYOUT_REFUSED_ONLY, value=refused.value,
                     framework=use.framework, accepted=refused.accepted, frameworks=", ".join(others))


def gpu_refused(field: str, gpu: str, vendor: str, framework: str, accepted: list[str],
                others: list[str]) -> InputError:
    """The one-line refusal of ``gpu`` (named by ``field``: ``hardware.gpu`` or ``--gpu``), a ``vendor`` accelerator
    ``framework`` does not train on: the vendors it does (``accepted``, codes), and the frameworks to name instead;
    vendors by name (a lone one translated on display: ``report/error_text.py``)."""
    return InputError(field, _VENDOR_REFUSED if others else _VENDOR_REFUSED_ONLY, value=gpu, vendor=vendor_name(vendor),
                      framework=framework, accepted=", ".join(vendor_name(v) for v in accepted),
                      frameworks=", ".join(others))


# ``SettingUse.to_dict`` ("from" is a keyword: the functional form)
SettingJSON = TypedDict("SettingJSON", {"key": str, "value": Any, "from": str, "source": NotRequired[str]})


class FrameworkJSON(TypedDict):
    """``FrameworkUse.to_dict``: an estimate's ``framework``."""

    framework: str
    family: str
    profile_version: str
    backend: str
    assumed: bool
    settings: list[SettingJSON]


@dataclass(frozen=True, slots=True)
class SettingUse:
    """Where one internals key of an estimate came from: ``stated`` by the scenario (over the profile) or set by the
    ``profile``, with the source line it is read from."""

    key: str
    value: Any
    origin: Literal["stated", "profile"]
    source: str | None = None

    def to_dict(self) -> SettingJSON:
        out: SettingJSON = {"key": self.key, "value": self.value, "from": self.origin}
        if self.source is not None:
            out["source"] = self.source
        return out


@dataclass(frozen=True)
class FrameworkUse:
    """The framework an estimate ran with: its name, whether it was assumed, and where each internals key came
    from (``stated``: the scenario; ``profile``: the profile, with its source; unset keys keep the estimate's
    default)."""

    framework: str
    family: str
    version_read: str
    backend: str
    assumed: bool
    settings: tuple[SettingUse, ...] = ()

    def to_dict(self) -> FrameworkJSON:
        return {"framework": self.framework, "family": self.family, "profile_version": self.version_read,
                "backend": self.backend, "assumed": self.assumed, "settings": [s.to_dict() for s in self.settings]}


def parse_name(name: str) -> tuple[str, str | None, str | None]:
    """'hf-trainer+deepspeed@0.14' -> (family, backend, version); an unknown family or backend is refused."""
    rest, _, version = name.partition("@")
    family, _, backend = rest.partition("+")
    known = families()
    if family not in known:
        raise InputError("training.framework", N_("{value!r} is not accepted; accepted: {accepted}"), value=name,
                         accepted=", ".join(known) + " (optionally +deepspeed / +fsdp and @version)")
    profile = load_profile(family)
    if backend and backend not in profile.backends:
        raise InputError("training.framework", N_("{value!r} is not accepted; accepted: {accepted}"), value=name,
                         accepted=", ".join([family, *(f"{family}+{b}" for b in profile.backends)]))
    return family, backend or None, version or None


def _stated(scenario: Scenario, key: str) -> bool:
    section, name = key.split(".", 1)
    return name in getattr(scenario, section).model_fields_set


def resolve(scenario: Scenario, framework: str | None = None) -> tuple[Scenario, FrameworkUse]:
    """``scenario`` with the internals keys it leaves out filled from its framework's profile (``framework`` if
    given, else ``training.framework``, else the one assumed for the method), and what each key came from."""
    name = framework or scenario.training.framework
    assumed = name is None
    if name is None:
        name = str(_index()["assumed"][scenario.training.method])
    family, backend, _version = parse_name(name)
    profile = load_profile(family)
    if backend is None:
        backend = profile.zero_backend if (profile.zero_backend and scenario.parallel.zero > 0) else "none"
    updates: dict[str, dict[str, Any]] = {"training": {}, "parallel": {}}  # model_validate's input per section
    rows: list[SettingUse] = []
    for s in profile.settings:
        if s.key in (r.key for r in rows) or not s.holds(scenario, backend):
            continue
        section, key = s.key.split(".", 1)
        if _stated(scenario, s.key):
            rows.append(SettingUse(s.key, getattr(getattr(scenario, section), key), "stated"))
            continue
        updates[section][key] = s.value
        rows.append(SettingUse(s.key, s.value, "profile", s.source))
    named = {} if assumed else {"framework": name}  # an assumed framework stays unnamed: its ranges are wider
    training = scenario.training.model_validate({**scenario.training.model_dump(exclude_unset=True),
                                                 **updates["training"], **named})
    parallel = scenario.parallel.model_validate({**scenario.parallel.model_dump(exclude_unset=True),
                                                 **updates["parallel"]})
    resolved = scenario.model_copy(update={"training": training, "parallel": parallel})
    use = FrameworkUse(name, family, profile.version, backend, assumed, tuple(rows))
    check_method(resolved, use)
    check_expert_parallel(resolved, use)
    check_parallelism(resolved, use, None)  # the GPU's vendor: where the GPU is the user's (check_gpu_vendor)
    return resolved, use


def check_gpu_vendor(scenario: Scenario, use: "FrameworkUse") -> None:
    """Refuse ``hardware.gpu`` where the named framework's release does not train on its vendor (a scenario's own
    GPU; a job's is the planner's to choose)."""
    check_parallelism(scenario, use, gpu_vendor(scenario.hardware.gpu))


def gpu_vendor(gpu: object) -> str | None:
    """The shipped catalog's vendor of a GPU id; None for an inline GPU or an id only a user's catalog holds."""
    if not isinstance(gpu, str):
        return None
    from trainsizer.hardware.catalog import default_catalog  # the catalog loads only when a framework is checked

    found = default_catalog().accelerators.get(gpu)
    return found.vendor if found is not None else None
