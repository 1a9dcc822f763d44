"""kata_harness.inductor_spellings: a respelled module runs the same kernels with the same
reductions, under other operator names and accumulator types."""

from __future__ import annotations

import ast
import random
import re

from kata_harness import inductor, inductor_spellings
from katas.phase16 import programs
from katas.phase16.handwritten import HANDWRITTEN_ROWS


def _shape(code: str) -> list:
    """Each kernel call's kind and reductions, and a library call's name (a fallback's operator
    is respelled)."""
    sources = inductor.kernel_sources(code)
    found = []
    for c in inductor.calls(code):
        if c.kind == "fused":
            found.append((c.kind, inductor.accumulators(sources[c.name])))
        else:
            found.append((c.kind, c.name if c.kind == "extern" else ""))
    return found


def _types(code: str) -> set[str]:
    return set(re.findall(r"^\s*(\S+) tmp_acc\d+ =", code, re.M))


def test_respelled_keeps_the_kernels_and_their_reductions() -> None:
    code = programs.recorded("layernorm_softmax")[0]
    found_types: set[str] = set()
    last_ops: set[str] = set()
    for seed in range(6):
        text = inductor_spellings.respelled(code, random.Random(seed))
        ast.parse(text)
        assert _shape(text) == _shape(code)
        found_types |= _types(text)
        last_ops |= {inductor.fused_ops(c.name).rsplit("_", 1)[-1] for c in inductor.calls(text)}
    assert found_types - {"float"}, "accumulators retyped"
    assert any(op[-1].isdigit() for op in last_ops), "a kernel named after an op ending in 1 or 2"


def test_respelled_retypes_what_a_templated_accumulator_holds() -> None:
    text = inductor_spellings.respelled(HANDWRITTEN_ROWS, random.Random(1))
    assert _shape(text) == _shape(HANDWRITTEN_ROWS)
    welford = re.search(r"(Welford<[\w:<>]+>) tmp_acc0 = (Welford<[\w:<>]+>)\(\);", text)
    assert welford is not None and welford[1] == welford[2]
    assert welford[1].removeprefix("Welford<")[:-1] in inductor_spellings.FLOATS


def test_respelled_names_one_kernel_after_another_with_a_digit_more() -> None:
    # the backward of train_mlp_gelu defines kernels with 0 and 1 accumulators
    code = programs.recorded("train_mlp_gelu")[1]
    for seed in range(6):
        text = inductor_spellings.respelled(code, random.Random(seed))
        assert _shape(text) == _shape(code)
        sources = inductor.kernel_sources(text)
        defined = list(sources)
        pairs = [
            (a, b) for a in defined for b in defined if a != b and a.startswith(b)
        ]  # a is b with more digits
        assert len(pairs) == 1, f"seed {seed}: {defined}"
        longer, shorter = pairs[0]
        assert defined.index(longer) < defined.index(shorter), "the longer name defined first"
        assert inductor.accumulators(sources[longer]) != inductor.accumulators(sources[shorter])


def test_refallen_calls_other_operators_one_of_them_a_view() -> None:
    # HANDWRITTEN_ROWS runs three fallbacks (index, sum.dim_IntList, amax), one of them nested
    views = {op for op, _ in inductor_spellings.VIEWS}
    before = [c.line.split("(")[0] for c in inductor.calls(HANDWRITTEN_ROWS)]
    for seed in range(6):
        text = inductor_spellings.refallen(HANDWRITTEN_ROWS, random.Random(seed))
        ast.parse(text)
        assert _shape(text) == _shape(HANDWRITTEN_ROWS)
        ops = [c.name for c in inductor.calls(text) if c.kind == "fallback"]
        assert len(ops) == 3 and set(ops) & views, f"seed {seed}: {ops}"
        after = [c.line.split("(")[0] for c in inductor.calls(text)]
        assert [a.split("torch.ops")[0] for a in after] == [
            b.split("torch.ops")[0] for b in before
        ], "each fallback keeps its place and the buffer it is assigned to"
    assert inductor_spellings.refallen("no fallback", random.Random(0)) == "no fallback"


def test_symbolic_sizes_keep_each_inputs_dimensions() -> None:
    code = programs.recorded("dense_relu")[0]
    text = inductor_spellings.symbolic_sizes(HANDWRITTEN_ROWS)
    assert "assert_size_stride(b, (s" in text, "a rank-1 size written symbolically"
    for source in (code, HANDWRITTEN_ROWS):
        text = inductor_spellings.symbolic_sizes(source)
        ast.parse(text)
        assert _shape(text) == _shape(source)
        ranks = {n: len(s) for n, s in inductor.asserted_sizes(text).items()}
        assert ranks == {n: len(s) for n, s in inductor.asserted_sizes(source).items()}
        assert not re.search(r"assert_size_stride\(\w+, \([^)]*\b(?!1\b)\d+", text)


def test_unclear_leaves_the_kernels_and_what_blocks_test() -> None:
    text = inductor_spellings.unclear(HANDWRITTEN_ROWS)
    assert "args.clear()" not in text and "del args[:]" not in text
    assert _shape(text) == _shape(HANDWRITTEN_ROWS)
    nested = HANDWRITTEN_ROWS.replace("        if buf0.numel():", "        if len(args) == 0:")
    text = inductor_spellings.unclear(nested)
    assert "args.clear()" not in text and "del args[:]" in text, "args still emptied"
    assert _shape(text) == _shape(nested)
