"""Phase 3's drawn modules (kata_harness.oracles.hlo_drawn) hold what their docstring promises,
in every draw, and XLA's parser takes each of them."""

import random

import pytest

from kata_harness import oracles
from kata_harness.oracles import hlo_drawn
from kata_harness.xla_facts import xla_facts


@pytest.mark.parametrize("seed", range(4))
def test_every_draw_holds_an_empty_tuple_parameter(seed):
    rng = random.Random(seed)
    for root in hlo_drawn.ROOT_KINDS:
        text = oracles.xla_module(hlo_drawn.entry_module(rng, root)).text
        layouts = [layout for _, layout in xla_facts(text).params]
        assert "()" in layouts, layouts
        assert any(lay.startswith("(") and "()" in lay[1:-1] for lay in layouts), layouts


@pytest.mark.parametrize("seed", range(4))
def test_every_draw_holds_a_memory_space_layout(seed):
    """A memory space S(n) is part of the layout XLA reads (after the order, or after a tile)."""
    rng = random.Random(seed)
    for root in hlo_drawn.ROOT_KINDS:
        text = oracles.xla_module(hlo_drawn.entry_module(rng, root)).text
        layouts = [layout for _, layout in xla_facts(text).params]
        assert any(":S(" in lay or ")S(" in lay for lay in layouts), layouts
