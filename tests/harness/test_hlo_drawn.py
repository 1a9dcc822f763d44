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


@pytest.mark.parametrize("seed", range(4))
def test_every_tiled_root_holds_a_tile_and_a_memory_space(seed):
    text = oracles.xla_module(hlo_drawn.entry_module(random.Random(seed), "tiled")).text
    _, shape = xla_facts(text).root
    assert ":T(" in shape and ")S(" in shape, shape


@pytest.mark.parametrize("seed", range(4))
def test_every_constants_draw_holds_laid_out_constants_and_an_iota_in_each_computation(seed):
    """Every constant's layout has a tile or a memory space; ENTRY and the called computation
    each hold constants and an iota (no constant)."""
    module = oracles.xla_module(hlo_drawn.constants_module(random.Random(seed)))
    shapes = list(xla_facts(module.text).constants.elements())
    assert shapes and all(":" in shape for shape in shapes), shapes
    for computation in module.computations:
        printed = [i.printed for i in computation.instructions]
        assert any(" constant(" in line for line in printed), computation.name
        assert any(" iota()" in line for line in printed), computation.name


@pytest.mark.parametrize("seed", range(4))
def test_every_constants_draw_prints_a_constant_after_each_root(seed):
    """XLA prints each computation's ROOT where the text put it: before one constant at least."""
    text = oracles.xla_module(hlo_drawn.constants_module(random.Random(seed))).text
    blocks = [block for block in text.split("\n}") if " ROOT " in block]
    assert len(blocks) == 2, text
    for block in blocks:
        after = block[block.index(" ROOT ") :].splitlines()[1:]
        assert any(" constant(" in line for line in after), block
