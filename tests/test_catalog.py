"""Hardware catalog: required ids, sources, user overrides, did-you-mean."""

import datetime

import pytest
import yaml

from trainsizer.datafiles import packaged_yaml
from trainsizer.errors import InputError
from trainsizer.hardware.catalog import default_catalog, load_catalog

REQUIRED_GPUS = [
    "rtx-3090-24gb", "rtx-4090-24gb", "rtx-5090-32gb", "titan-rtx-24gb", "rtx-a6000-48gb",
    "rtx-6000-ada-48gb", "l40s-48gb", "v100-sxm2-16gb", "v100-sxm2-32gb", "a100-sxm4-40gb", "a100-sxm4-80gb",
    "a100-pcie-40gb", "a100-pcie-80gb", "a800-sxm4-80gb", "h100-sxm5-80gb", "h100-pcie-80gb",
    "h100-nvl-94gb", "h800-sxm5-80gb", "h20-96gb", "h200-sxm-141gb", "b200-sxm-180gb", "b300-sxm-288gb",
    "mi300x-192gb", "mi325x-256gb", "mi355x-288gb", "ascend-910b-64gb",
]
REQUIRED_LINKS = [
    "nvlink2", "nvlink3", "nvlink4", "nvlink5", "pcie3", "pcie4", "pcie5", "hccs", "xgmi", "ib-hdr-200",
    "ib-ndr-400", "ib-xdr-800", "roce-100", "roce-200", "roce-400", "eth-25", "eth-100",
]


@pytest.mark.parametrize("gpu_id", REQUIRED_GPUS)
def test_required_gpu_ids_resolve(gpu_id):
    gpu = default_catalog().accelerator(gpu_id)
    assert gpu.memory_gib > 10
    assert gpu.memory_bandwidth_gbps and gpu.memory_bandwidth_gbps > 300


@pytest.mark.parametrize("link_id", REQUIRED_LINKS)
def test_required_link_ids_resolve(link_id):
    assert default_catalog().link(link_id).per_direction_gbps > 0


@pytest.mark.parametrize("name,key", [("accelerators.yaml", "accelerators"), ("links.yaml", "links")])
def test_every_catalog_entry_has_source_and_iso_as_of(name, key):
    for entry in packaged_yaml("trainsizer.hardware", name)[key]:
        assert entry["source"].strip(), entry["id"]
        datetime.date.fromisoformat(str(entry["as_of"]))


def test_dense_and_sparse_rates_are_kept_apart():
    for gpu in default_catalog().accelerators.values():
        for dtype in ("bf16", "fp16", "fp8"):
            dense, sparse = getattr(gpu.dense_tflops, dtype), getattr(gpu.sparse_tflops, dtype)
            if dense and sparse:
                assert sparse >= 1.4 * dense, (gpu.id, dtype)
    h100 = default_catalog().accelerator("h100-sxm5-80gb")
    assert h100.dense_tflops.bf16 == pytest.approx(989, rel=0.01)
    assert default_catalog().accelerator("rtx-4090-24gb").dense_tflops.bf16 == pytest.approx(165, rel=0.01)


def test_links_referenced_by_gpus_exist():
    cat = default_catalog()
    for gpu in cat.accelerators.values():
        if gpu.default_intra_node:
            cat.link(gpu.default_intra_node)
        if gpu.scale_up and gpu.scale_up.link:
            cat.link(gpu.scale_up.link)


def test_unknown_gpu_suggests_close_ids():
    with pytest.raises(InputError) as exc:
        default_catalog().accelerator("h100-sxm-80gb")
    assert "h100-sxm5-80gb" in str(exc.value)
    assert exc.value.field == "hardware.gpu"


def test_user_file_overrides_and_adds(tmp_path):
    user = tmp_path / "mine.yaml"
    user.write_text(yaml.safe_dump({"accelerators": [
        {"id": "rtx-4090-24gb", "name": "4090 48GB mod", "memory_gib": 47.99, "source": "our card",
         "as_of": "2026-12-01"},
        {"id": "my-npu", "name": "My NPU", "memory_gib": 32, "source": "vendor", "as_of": "2026-12-01"},
    ]}))
    cat = load_catalog([user])
    assert cat.accelerator("rtx-4090-24gb").memory_gib == 47.99
    assert cat.accelerator("my-npu").name == "My NPU"
    assert default_catalog().accelerator("rtx-4090-24gb").memory_gib < 25  # shipped catalog untouched


def test_user_file_with_a_bad_entry_names_the_field(tmp_path):
    user = tmp_path / "bad.yaml"
    user.write_text(yaml.safe_dump({"accelerators": [{"id": "x", "name": "x", "memory_gib": -1,
                                                      "source": "s", "as_of": "2026-01-01"}]}))
    with pytest.raises(InputError) as exc:
        load_catalog([user])
    assert "memory_gib" in str(exc.value)
