"""tools/allocator_replay.py follows the CUDA caching allocator's rules (c10/cuda/CUDACachingAllocator.cpp):
segment sizes by request, best-fit reuse of cached blocks, splitting, merging of freed neighbours."""

import sys

from conftest import REPO

sys.path.insert(0, str(REPO / "tools"))
try:
    from allocator_replay import MIB, replay
finally:
    sys.path.remove(str(REPO / "tools"))


def alloc(key, size):
    return ("alloc", key, size)


def free(key):
    return ("free", key, 0)


def test_small_requests_share_2_mib_segments_and_round_to_512_bytes():
    a = replay([alloc(i, 100) for i in range(10)])
    assert a.reserved == 2 * MIB and a.allocated == 10 * 512


def test_mid_sized_requests_share_20_mib_segments():
    a = replay([alloc(i, 4 * MIB) for i in range(5)])
    assert a.reserved == 20 * MIB
    assert replay([alloc(i, 4 * MIB) for i in range(6)]).reserved == 40 * MIB


def test_large_requests_get_their_own_segment_rounded_to_2_mib():
    assert replay([alloc(0, 11 * MIB)]).reserved == 12 * MIB


def test_a_cached_block_is_split_and_its_halves_merge_again():
    a = replay([alloc(0, 64 * MIB), free(0), alloc(1, 16 * MIB), alloc(2, 48 * MIB), free(1), free(2),
                alloc(3, 64 * MIB)])
    assert a.reserved == 64 * MIB and a.peak_allocated == 64 * MIB


def test_a_freed_block_too_small_for_the_next_request_stays_cached():
    a = replay([alloc(0, 16 * MIB), free(0), alloc(1, 32 * MIB)])
    assert a.reserved == 48 * MIB and a.allocated == 32 * MIB
