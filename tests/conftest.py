from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
# The measured cases the shipped parameters are fitted on, in the repository (validation/cases/README.md): every
# test reads only files inside the repository.
VALIDATION = REPO / "validation" / "cases"


def base_scenario(**overrides):
    """A small valid scenario mapping; keyword overrides use section__key names."""
    data = {
        "model": {"preset": "llama-3.1-8b"},
        "training": {"method": "full", "precision": "bf16-mixed", "optimizer": "adamw",
                     "micro_batch_size": 1, "seq_len": 2048},
        "parallel": {"gpus": 1},
        "hardware": {"gpu": "h100-sxm5-80gb"},
    }
    for key, value in overrides.items():
        section, field = key.split("__", 1)
        if value is None:
            data[section].pop(field, None)
        else:
            data[section][field] = value
    return data


@pytest.fixture
def scenario_data():
    return base_scenario()

