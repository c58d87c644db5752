"""A short run of the mutational fuzzer (``make fuzz`` runs a million inputs)."""

from __future__ import annotations

import pytest

from .mutate import TARGETS, run


@pytest.mark.parametrize("seed", [1, 2])
def test_decoders_answer_a_value_or_protocol_error(seed: int) -> None:
    counts = run(12 * 2_000, seed)
    assert counts["inputs"] == 24_000
    assert counts["protocol_error"] > 0 and counts["decoded"] > 0  # both paths exercised


def test_every_seed_decodes_unmutated() -> None:
    for _name, (seed, decode) in TARGETS.items():
        decode(seed)
