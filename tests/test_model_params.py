"""Issue 20: the memory and step-time model parameters are typed, frozen objects loaded once from the YAML, each
parameter with its provenance; a misspelt key fails at load with the file, the key and the closest valid keys."""

from __future__ import annotations

import dataclasses
import importlib.util
import sys

import pytest
import yaml
from conftest import REPO

from trainsizer.cli import main
from trainsizer.datafiles import packaged_yaml
from trainsizer.errors import InputError
from trainsizer.estimate import model_params
from trainsizer.estimate.calibration import load_calibration
from trainsizer.estimate.model_params import (
    MEMORY_FILE,
    PACKAGE,
    PERFORMANCE_FILE,
    MemoryModel,
    PerformanceModel,
    load_model,
    memory_model,
    performance_model,
)
from trainsizer.estimate.typed_data import Table, to_plain, value_at, with_value
from trainsizer.evidence.calibrate import MEMORY_FREE, PERFORMANCE_FREE

MODELS = [(MemoryModel, MEMORY_FILE, memory_model, MEMORY_FREE),
          (PerformanceModel, PERFORMANCE_FILE, performance_model, PERFORMANCE_FREE)]


@pytest.mark.parametrize(("cls", "name", "load", "free"), MODELS)
def test_the_typed_model_holds_every_key_and_value_of_its_yaml(cls, name, load, free):
    model = load()
    assert isinstance(model, cls) and load() is model  # loaded once
    assert to_plain(model) == packaged_yaml(PACKAGE, name)  # nothing dropped, renamed or converted


def test_formulas_read_parameters_as_attributes_of_frozen_objects():
    mp, pp = memory_model(), performance_model()
    assert mp.activations.implementation_factor == packaged_yaml(PACKAGE, MEMORY_FILE)["activations"][
        "implementation_factor"]
    assert pp.compute.max_efficiency["hopper"] == packaged_yaml(PACKAGE, PERFORMANCE_FILE)["compute"][
        "max_efficiency"]["hopper"]
    assert mp.quantization.formats["nf4-dq"].code_bytes == 0.5
    with pytest.raises(dataclasses.FrozenInstanceError):
        mp.activations.implementation_factor = 2.0  # type: ignore[misc]
    with pytest.raises(TypeError):
        pp.compute.max_efficiency["hopper"] = 0.9  # type: ignore[index]


def test_a_fit_replaces_one_value_in_a_copy_and_leaves_the_shipped_model_alone():
    pp = performance_model()
    trial = with_value(pp, "compute.max_efficiency", "hopper", 0.5)
    assert value_at(trial, "compute.max_efficiency", "hopper") == 0.5
    assert pp.compute.max_efficiency["hopper"] != 0.5
    assert trial.compute.max_efficiency["ampere"] == pp.compute.max_efficiency["ampere"]
    assert trial.communication is pp.communication  # untouched sections are shared, not copied
    with pytest.raises(KeyError):
        with_value(pp, "compute", "max_efficency", 0.5)


@pytest.mark.parametrize(("cls", "name", "load", "free"), MODELS)
def test_each_parameter_carries_its_provenance_and_the_fitted_ones_are_what_the_fitter_frees(cls, name, load, free):
    prov = load().provenance
    fitted = {k for k, p in prov.items() if p.kind == "fitted" and not k.startswith("mfu_ceiling.")}
    assert fitted == {f"{dotted}.{key}" for dotted, key, _ in free}
    excluded = set(packaged_yaml(PACKAGE, name)["fit"]["exclude"])
    assert all(set(prov[k].excluded) == excluded and "tools/fit_" in prov[k].source for k in fitted)
    assumed = [p for p in prov.values() if p.kind == "assumed"]
    assert assumed and all(p.source for p in assumed)  # an assumed value names its source


def test_an_mfu_ceiling_is_fitted_on_the_cases_its_row_names():
    prov = performance_model().provenance
    row = performance_model().mfu_ceiling.table["hopper"]["bf16-mixed"]
    assert prov["mfu_ceiling.table.hopper.bf16-mixed"].cases == row.cases and row.cases
    assert prov["mfu_ceiling.fallback"].kind == "assumed"


@pytest.mark.parametrize(("section", "typo", "closest"), [("activations", "implementaton_factor",
                                                           "implementation_factor"),
                                                          ("allocator", "reserved_fraction_dynamc",
                                                           "reserved_fraction_dynamic")])
def test_a_misspelt_key_in_the_shipped_yaml_fails_at_load_naming_file_key_and_closest(section, typo, closest):
    data = yaml.safe_load((REPO / "src/trainsizer/estimate" / MEMORY_FILE).read_text(encoding="utf-8"))
    data[section][typo] = data[section].pop(closest)
    with pytest.raises(InputError) as exc:
        load_model(MemoryModel, data, "memory_model.yaml", MEMORY_FILE)
    line = str(exc.value)
    assert "\n" not in line and len(line) <= 200
    assert line.startswith(f"memory_model.yaml: {section}.{typo}: unknown key (did you mean '{closest}'")


def test_a_misspelt_key_in_a_nested_section_and_a_missing_one_are_named():
    data = yaml.safe_load((REPO / "src/trainsizer/estimate" / PERFORMANCE_FILE).read_text(encoding="utf-8"))
    data["communication"]["overlap"]["cpp"] = data["communication"]["overlap"].pop("cp")
    with pytest.raises(InputError, match=r"perf.yaml: communication\.overlap\.cpp: unknown key \(did you mean 'cp'"):
        load_model(PerformanceModel, data, "perf.yaml", PERFORMANCE_FILE)
    data["communication"]["overlap"]["cp"] = data["communication"]["overlap"].pop("cpp")
    del data["overhead"]["per_step_s"]
    with pytest.raises(InputError, match=r"perf.yaml: overhead\.per_step_s: is required"):
        load_model(PerformanceModel, data, "perf.yaml", PERFORMANCE_FILE)
    data["overhead"]["per_step_s"] = "fast"
    with pytest.raises(InputError, match=r"overhead\.per_step_s: 'fast' is not accepted; accepted: a finite number"):
        load_model(PerformanceModel, data, "perf.yaml", PERFORMANCE_FILE)


def test_a_misspelt_shipped_key_exits_2_with_one_line_through_the_cli(monkeypatch, capsys, tmp_path):
    monkeypatch.setenv("TRAINSIZER_CACHE_DIR", str(tmp_path))  # the file is built, not the kept copy of it read
    data = yaml.safe_load((REPO / "src/trainsizer/estimate" / MEMORY_FILE).read_text(encoding="utf-8"))
    data["logits"]["standard_byte"] = data["logits"].pop("standard_bytes")
    real = model_params.packaged_yaml
    monkeypatch.setattr(model_params, "packaged_yaml", lambda pkg, name: data if name == MEMORY_FILE else real(pkg,
                                                                                                             name))
    model_params.memory_model.cache_clear()
    monkeypatch.setattr(sys, "argv", ["trainsizer", "estimate"])
    try:
        with pytest.raises(SystemExit) as exc:
            main()
    finally:
        model_params.memory_model.cache_clear()
    out = capsys.readouterr()
    lines = [line for line in (out.out + out.err).splitlines() if line.strip()]
    assert exc.value.code == 2 and len(lines) == 1 and "Traceback" not in out.err, lines
    assert "memory_model.yaml: logits.standard_byte: unknown key (did you mean 'standard_bytes'" in lines[0]


def test_a_calibration_profile_is_checked_against_the_same_types_and_its_values_are_fitted_on_its_cases(tmp_path):
    path = tmp_path / "cal.yaml"
    path.write_text(yaml.safe_dump({"memory": {"activations": {"implementation_factor": 1.2}},
                                    "performance": {"compute": {"max_efficiency": {"hopper": 0.6}}},
                                    "fitted_on": ["case-a", "case-b"]}), encoding="utf-8")
    memory, perf = load_calibration(path)
    assert isinstance(memory, MemoryModel) and isinstance(perf, PerformanceModel)
    assert memory.activations.implementation_factor == 1.2 and perf.compute.max_efficiency["hopper"] == 0.6
    assert perf.compute.max_efficiency["ampere"] == performance_model().compute.max_efficiency["ampere"]
    assert memory.provenance["activations.implementation_factor"].cases == ("case-a", "case-b")
    assert str(path) in memory.provenance["activations.implementation_factor"].source
    assert perf.provenance["compute.max_efficiency.hopper"].cases == ("case-a", "case-b")
    assert perf.provenance["compute.max_efficiency.ampere"] == performance_model().provenance[
        "compute.max_efficiency.ampere"]
    path.write_text(yaml.safe_dump({"performance": {"compute": {"max_efficiency": {"hoper": 0.6}}}}), encoding="utf-8")
    with pytest.raises(InputError) as exc:
        load_calibration(path)
    assert str(exc.value).startswith("--calibration.performance.compute.max_efficiency.hoper: unknown key (did you "
                                     "mean 'hopper'")
    assert str(path) in str(exc.value)


def test_the_shipped_models_kept_in_the_cache_folder_are_those_built_from_the_files(monkeypatch, tmp_path):
    monkeypatch.setenv("TRAINSIZER_CACHE_DIR", str(tmp_path))
    for cls, name in ((MemoryModel, MEMORY_FILE), (PerformanceModel, PERFORMANCE_FILE)):
        kept = model_params._shipped(cls, name)  # built and kept
        assert model_params._shipped(cls, name) == kept  # read back
        assert kept == load_model(cls, packaged_yaml(model_params.PACKAGE, name), model_params._shipped_path(name),
                                  name)
    assert len(list(tmp_path.rglob("model-*.pickle"))) == 2


def test_tables_pickle_for_the_web_workers():
    import pickle

    pp = performance_model()
    assert pickle.loads(pickle.dumps(pp)) == pp
    assert isinstance(pickle.loads(pickle.dumps(pp.compute.max_efficiency)), Table)


def test_a_refit_writes_the_yaml_back_in_its_own_format(tmp_path):
    """tools/fit_*.py write fitted values into the YAML in place: writing the shipped values reproduces the file."""
    spec = importlib.util.spec_from_file_location("fitting", REPO / "tools" / "fitting.py")
    assert spec and spec.loader
    sys.path.insert(0, str(REPO / "tools"))
    try:
        fitting = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(fitting)
    finally:
        sys.path.remove(str(REPO / "tools"))
    for name, model, free in ((MEMORY_FILE, memory_model(), MEMORY_FREE),
                              (PERFORMANCE_FILE, performance_model(), PERFORMANCE_FREE)):
        shipped = (REPO / "src/trainsizer/estimate" / name).read_text(encoding="utf-8")
        copy = tmp_path / name
        copy.write_text(shipped, encoding="utf-8")
        fitting.write_values(copy, model, free)
        assert copy.read_text(encoding="utf-8") == shipped
        fitting.write_values(copy, with_value(model, free[0][0], free[0][1], 0.123), free)
        assert copy.read_text(encoding="utf-8") != shipped and "0.123" in copy.read_text(encoding="utf-8")
