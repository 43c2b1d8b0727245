"""Megatron's tensor-parallel schedule: which collectives wait on the critical path and which run beside a GEMM."""

import numpy as np
import pytest

from trainsizer.estimate import tp_schedule


def test_without_sequence_parallelism_the_backward_all_reduces_can_hide():
    split = tp_schedule.split_units(False, 0.0, False)
    assert split.exposed_units == 2.0  # the forward all-reduces of the two blocks
    assert split.hideable_units == 2.0  # the column-parallel input-gradient all-reduces
    assert split.window_gemms == 1.0  # beside the weight-gradient GEMMs only


def test_sequence_parallelism_adds_the_output_gradient_gathers_and_the_input_regathers():
    plain, sp = tp_schedule.split_units(False, 0.0, False), tp_schedule.split_units(True, 0.0, False)
    assert sp.exposed_units > plain.exposed_units  # the row-parallel output-gradient all-gathers wait
    assert sp.hideable_units > plain.hideable_units  # the re-gathers run beside the input-gradient GEMMs
    assert sp.window_gemms == 2 * plain.window_gemms


def test_recomputation_puts_the_forward_collectives_on_the_critical_path_again():
    once, again = tp_schedule.split_units(True, 0.0, False), tp_schedule.split_units(True, 1.0, False)
    assert again.exposed_units - once.exposed_units == pytest.approx(tp_schedule.FORWARD_UNITS)
    assert again.hideable_units == once.hideable_units


def test_tp_comm_overlap_moves_every_collective_behind_the_gemms():
    plain, overlapped = tp_schedule.split_units(True, 1.0, False), tp_schedule.split_units(True, 1.0, True)
    assert overlapped.exposed_units == 0.0
    assert overlapped.hideable_units == pytest.approx(plain.exposed_units + plain.hideable_units)
    assert overlapped.window_gemms < 0  # every linear GEMM of the micro-batch


def test_split_elementwise_over_layouts():
    split = tp_schedule.split_units(np.array([False, True]), np.array([0.0, 1.0]), False)
    for i, (sp, rec) in enumerate([(False, 0.0), (True, 1.0)]):
        one = tp_schedule.split_units(sp, rec, False)
        assert split.exposed_units[i] == one.exposed_units and split.hideable_units[i] == one.hideable_units


def test_hidden_traffic_is_bounded_by_the_gemm_it_runs_beside():
    # a window longer than the traffic hides all of it; a shorter one leaves the rest exposed
    assert tp_schedule.exposed_tp_s(1.0, 0.5, 2.0, 0.5) == 1.0
    assert tp_schedule.exposed_tp_s(1.0, 3.0, 1.0, 0.5) == pytest.approx(1.0 + 3.0 - 2.0)
    # a lower GEMM efficiency makes the window longer
    assert tp_schedule.exposed_tp_s(0.0, 3.0, 1.0, 0.25) < tp_schedule.exposed_tp_s(0.0, 3.0, 1.0, 0.5)


def _tp_comm_s(**parallel) -> float:
    from trainsizer.api import estimate
    from trainsizer.scenario import scenario_from_dict

    job = {"model": {"preset": "llama-2-13b"},
           "training": {"method": "full", "precision": "bf16-mixed", "micro_batch_size": 1, "seq_len": 4096,
                        "global_batch_size": 64, "activation_checkpointing": "none"},
           "parallel": {"gpus": 8, "tp": 8, "zero": 0, **parallel},
           "hardware": {"gpu": "a800-sxm4-80gb", "gpus_per_node": 8}}
    return estimate(scenario_from_dict(job), with_limits=False).performance.breakdown_s["tp_comm"]


def test_an_estimate_waits_for_less_tensor_parallel_traffic_where_the_run_overlaps_it():
    plain = _tp_comm_s(sequence_parallel=True)
    assert plain > 0
    assert _tp_comm_s(sequence_parallel=True, tp_comm_overlap=True) < plain
