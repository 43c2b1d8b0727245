"""The estimate command's scenario flags come from the typed scenario: each names a real field, its help lists
exactly the field's accepted values, and a bad value is refused by the scenario's own check, naming the field."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Literal, get_args, get_origin

import pytest
from typer.testing import CliRunner

from trainsizer.cli import app
from trainsizer.scenario import SECTION_MODELS, Scenario, flat_types
from trainsizer.scenario_flags import ESTIMATE_FLAGS, option_parameters


def _field(path: str):
    parent, _, key = path.rpartition(".")
    return SECTION_MODELS.get(parent, Scenario).model_fields[key]


@pytest.mark.parametrize("flag", ESTIMATE_FLAGS, ids=lambda f: f.path)
def test_each_flag_names_a_field_and_lists_its_choices(flag) -> None:
    info = _field(flag.path)
    choices = [str(v) for t in flat_types(info.annotation) if get_origin(t) is Literal for v in get_args(t)]
    [param] = option_parameters((flag,))
    help_text = get_args(param.annotation)[1].help or ""
    if choices and flag.path != "training.lora.targets":
        assert " | ".join(choices) in help_text


EXAMPLE = str(Path(__file__).parents[1] / "examples" / "llama-3.1-8b-lora-4090.yaml")


def test_every_choice_of_checkpointing_is_accepted_on_the_command_line() -> None:
    runner = CliRunner()
    choices = [v for t in flat_types(_field("training.activation_checkpointing").annotation) for v in get_args(t)]
    assert len(choices) == 5
    activations = {}
    for choice in choices:
        result = runner.invoke(app, ["estimate", EXAMPLE, "--checkpointing", str(choice), "--json"])
        assert result.exit_code == 0, (choice, result.output[-400:])
        activations[choice] = json.loads(result.output)["memory"]["components_gib"]["activations"]
    assert activations["full"] < activations["none"]  # the flag reaches the estimate


def test_a_bad_flag_value_names_the_field_and_exits_2() -> None:
    result = subprocess.run([sys.executable, "-m", "trainsizer.cli", "estimate", EXAMPLE, "--attention", "fast"],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 2
    assert "training.attention" in result.stderr and "flash" in result.stderr
    assert "Traceback" not in result.stderr
