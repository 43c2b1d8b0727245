"""The scenario field that names the training framework (``training.framework``): the profile of
``trainsizer.frameworks`` whose cited defaults fill the internals keys a user leaves out (validation/FORMAT.md,
"Extensions"). Only the name's shape is checked here; the family is checked against the shipped profiles where a
profile is applied (``trainsizer.frameworks.resolve``)."""

# Annotations stay objects here (no `from __future__ import annotations`): pydantic reads each field's type as
# is, without compiling its text into a ForwardRef first (~0.1 ms a model class, at every command's import).

from pydantic import BaseModel, ConfigDict, Field

# family, an optional +backend, an optional @version: llama-factory, hf-trainer+deepspeed@0.14, megatron-lm@core_r0.10
FRAMEWORK_PATTERN = r"^[a-z][a-z0-9-]*(\+[a-z][a-z0-9-]*)?(@[A-Za-z0-9._-]+)?$"


class FrameworkSettings(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True, allow_inf_nan=False)

    framework: str | None = Field(
        None, max_length=80, pattern=FRAMEWORK_PATTERN,
        description="extension: the framework that runs the job and its version, e.g. llama-factory@0.9, "
        "hf-trainer+deepspeed@0.14, torchtune, megatron-lm@core_r0.10 (trainsizer.frameworks: each a profile whose "
        "cited defaults fill the internals keys the scenario leaves out; a key the scenario states wins)")
