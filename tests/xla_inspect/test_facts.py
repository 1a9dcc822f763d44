"""hlo_facts: every fact equals XLA's own reading of the same compile, and a failing assertion
shows the IR it is about.

Oracles: jaxlib's private C++ HLO parser (`jaxlib._hlo.hlo_module_from_text`, counting opcodes,
fusion kinds and custom-call targets from its printer's canonical text, as test_oracle.py
does), `compiled.cost_analysis()` / `memory_analysis()` of a separate `jax.jit` compile, and
the NumPy arguments' shapes.
"""

from __future__ import annotations

import importlib.metadata
import re
import subprocess
import sys
from collections import Counter
from functools import cache

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from xla_inspect import HloFacts, hlo_facts
from xla_inspect.facts import FUSION_KINDS, FactsError, Matches
from xla_inspect.query import COLLECTIVE_OPCODES

_hlo = pytest.importorskip("jaxlib._hlo", reason="jaxlib's private HLO bindings are absent")
if not hasattr(_hlo, "hlo_module_from_text"):
    pytest.skip(
        "jaxlib._hlo.hlo_module_from_text is absent in this jaxlib", allow_module_level=True
    )

_PRINTED_OPCODE = re.compile(r" = .*? ([a-z][a-z0-9-]*)\(")
_KIND = re.compile(r"\bkind=(k[A-Za-z]+)")
_TARGET = re.compile(r'custom_call_target="([^"]*)"')
_CUSTOM_KIND = re.compile(r'"kind":"([^"]+)"')


def _text(compiled: jax.stages.Compiled) -> str:
    text = compiled.as_text()
    assert text is not None, "this backend prints no optimized HLO"
    return text


def _cost(compiled: jax.stages.Compiled) -> dict[str, float]:
    cost = compiled.cost_analysis()
    assert cost is not None, "this backend gives no cost analysis"
    return dict(cost)


def _xla(text: str) -> tuple[Counter[str], Counter[str], Counter[str]]:
    """(opcodes, fusion labels, custom-call targets) as XLA's C++ parser reads `text`."""
    opcodes: Counter[str] = Counter()
    labels: Counter[str] = Counter()
    targets: Counter[str] = Counter()
    for computation in _hlo.hlo_module_from_text(text).computations():
        for instruction in computation.instructions():
            printed = instruction.to_string()
            opcode = _PRINTED_OPCODE.search(printed)
            assert opcode is not None, printed
            opcodes[opcode.group(1)] += 1
            if opcode.group(1) == "fusion":
                kind = _KIND.search(printed)
                assert kind is not None, printed
                custom = _CUSTOM_KIND.search(printed) if kind[1] == "kCustom" else None
                labels[f"{kind[1]}({custom[1]})" if custom else kind[1]] += 1
            if opcode.group(1) == "custom-call":
                target = _TARGET.search(printed)
                targets[target.group(1) if target else ""] += 1
    return opcodes, labels, targets


# -- test-owned programs ----------------------------------------------------------------------


def _mlp_loss(params, x):
    h = jnp.tanh(x @ params["w1"] + params["b1"])
    return jnp.mean((h @ params["w2"]) ** 2)


def _mlp_args():
    rng = np.random.default_rng(0)
    params = {
        "w1": rng.standard_normal((8, 16), np.float32),
        "b1": rng.standard_normal((16,), np.float32),
        "w2": rng.standard_normal((16, 3), np.float32),
    }
    return params, rng.standard_normal((32, 8), np.float32)


def _solve(a, b):
    return jax.scipy.linalg.cho_solve(jax.scipy.linalg.cho_factor(a), b)


def _solve_args():
    rng = np.random.default_rng(1)
    m = rng.standard_normal((6, 6), np.float32)
    return m @ m.T + 6 * np.eye(6, dtype=np.float32), rng.standard_normal((6, 2), np.float32)


def _power(x, n):
    for _ in range(n):
        x = jnp.sin(x) * x
    return x


PROGRAMS = {
    "mlp_grad": (jax.grad(_mlp_loss), _mlp_args),
    "solve": (_solve, _solve_args),
}


@cache
def _compiled(name: str) -> tuple[jax.stages.Lowered, jax.stages.Compiled]:
    fn, make_args = PROGRAMS[name]
    lowered = jax.jit(fn).lower(*make_args())
    return lowered, lowered.compile()


@cache
def _facts(name: str) -> HloFacts:
    fn, make_args = PROGRAMS[name]
    return hlo_facts(fn, *make_args())


def _sharded():
    if len(jax.devices()) < 2:
        pytest.skip(f"needs 2+ devices for collectives; this backend has {len(jax.devices())}")
    mesh = jax.make_mesh((2,), ("x",), devices=jax.devices()[:2])

    def body(a):
        total = jax.lax.psum(a.sum(), "x")
        return jax.lax.all_gather(a * total, "x", tiled=True)

    fn = jax.shard_map(body, mesh=mesh, in_specs=P("x"), out_specs=P(), check_vma=False)
    x = np.arange(8, dtype=np.float32).reshape(4, 2)
    return fn, jax.device_put(x, NamedSharding(mesh, P("x")))


# -- facts against XLA ------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_opcodes_and_instructions_match_xla(name):
    facts = _facts(name)
    want, _, _ = _xla(_text(_compiled(name)[1]))
    assert facts.stage_name == "optimized"
    assert facts.opcodes == want
    for opcode, count in want.items():
        assert facts.instructions(opcode) == count, opcode
        assert {i.opcode for i in facts.instructions(opcode)} == {opcode}
    assert len(facts.instructions()) == want.total()


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_fusions_by_kind_and_label_match_xla(name):
    facts = _facts(name)
    _, labels, _ = _xla(_text(_compiled(name)[1]))
    assert len(facts.fusions()) == labels.total() > 0
    for kind in FUSION_KINDS:
        want = sum(n for label, n in labels.items() if label.partition("(")[0] == kind)
        assert facts.fusions(kind=kind) == want, kind
        assert all(f.kind == kind for f in facts.fusions(kind=kind))
    for label, count in labels.items():
        assert facts.fusions(label=label) == count, label


def test_collectives_match_xla():
    fn, x = _sharded()
    facts = hlo_facts(fn, x)
    want, _, _ = _xla(_text(jax.jit(fn).lower(x).compile()))
    for op in ("all-reduce", "all-gather"):
        assert facts.collectives(op) == want[op] + want[f"{op}-start"] > 0, op
        assert {c.opcode.removesuffix("-start") for c in facts.collectives(op)} == {op}
    assert facts.collectives() == sum(want[op] for op in COLLECTIVE_OPCODES)
    assert not _facts("mlp_grad").collectives()


def test_custom_calls_match_xla():
    facts = _facts("solve")
    _, _, targets = _xla(_text(_compiled("solve")[1]))
    if jax.default_backend() == "cpu":  # LAPACK calls on CPU; GPU and TPU differ
        assert targets.total() > 0, "the CPU compile of cho_factor calls LAPACK"
    assert facts.custom_calls() == targets.total()
    for target, count in targets.items():
        assert facts.custom_calls(target) == count, target
    assert facts.custom_calls("no_such_target") == 0


def test_cost_and_memory_are_the_compiles():
    facts = _facts("mlp_grad")
    compiled = _compiled("mlp_grad")[1]
    assert facts.cost == _cost(compiled)
    assert facts.cost["flops"] > 0
    stats = compiled.memory_analysis()
    assert facts.memory, "memory analysis is empty"
    for key, value in facts.memory.items():
        assert value == getattr(stats, key), key


def test_parameters_follow_the_arguments():
    params, x = _mlp_args()
    leaves = jax.tree.leaves((params, x))
    found = _facts("mlp_grad").parameters
    assert [p.number for p in found] == list(range(len(leaves)))
    for parameter, leaf in zip(found, leaves, strict=True):
        dims = parameter.shape.partition("[")[2].partition("]")[0]
        assert tuple(int(d) for d in dims.split(",") if d) == leaf.shape


def test_unoptimized_stage_is_the_lowering():
    facts = _facts("mlp_grad")
    before = facts.stage("unoptimized")
    want, _, _ = _xla(_compiled("mlp_grad")[0].as_text(dialect="hlo"))
    assert before.stage_name == "unoptimized" and before.opcodes == want
    assert before.opcodes["fusion"] == 0 < facts.opcodes["fusion"]
    assert before.stage("optimized").opcodes == facts.opcodes
    assert facts.stage("optimized") is facts


def test_every_source_gives_the_compiles_facts():
    lowered, compiled = _compiled("mlp_grad")
    want, _, _ = _xla(_text(compiled))
    fn, make_args = PROGRAMS["mlp_grad"]
    for what, facts in (
        ("jax.jit", hlo_facts(jax.jit(fn), *make_args())),
        ("Lowered", hlo_facts(lowered)),
        ("Compiled", hlo_facts(compiled)),
        ("text", hlo_facts(_text(compiled))),
    ):
        assert facts.opcodes == want, what
    assert hlo_facts(compiled).cost == _cost(compiled)
    with pytest.raises(FactsError, match="no unoptimized"):
        hlo_facts(compiled).stage("unoptimized")
    text = hlo_facts(_text(compiled))
    assert text.stage_name == "text"
    with pytest.raises(FactsError, match="no cost analysis"):
        _ = text.cost
    with pytest.raises(FactsError, match="takes no arguments"):
        hlo_facts(_text(compiled), 1)


def test_ir_files(tmp_path):
    lowered, compiled = _compiled("mlp_grad")
    (tmp_path / "opt.hlo").write_text(_text(compiled))
    from_hlo = hlo_facts(tmp_path / "opt.hlo")
    assert from_hlo.stage_name == "text" and from_hlo.opcodes == _xla(_text(compiled))[0]
    (tmp_path / "m.mlir").write_text(lowered.as_text())
    from_mlir = hlo_facts(tmp_path / "m.mlir")
    assert from_mlir.stage_name == "optimized"
    assert from_mlir.opcodes == _xla(from_mlir.text)[0]
    assert from_mlir.fusions() == _xla(from_mlir.text)[0]["fusion"] > 0
    assert from_mlir.stage("unoptimized").opcodes["fusion"] == 0
    assert from_mlir.cost["flops"] == _cost(compiled)["flops"]


def test_static_keyword_arguments():
    x = np.linspace(0.1, 1.0, 5, dtype=np.float32)
    for n in (2, 3):
        want, _, _ = _xla(_text(jax.jit(_power, static_argnames="n").lower(x, n=n).compile()))
        facts = hlo_facts(_power, x, n=n, static_argnames="n")
        assert facts.opcodes == want
        assert facts.stage("unoptimized").opcodes["sine"] == n


# -- Matches: counts compare, lists stay lists --------------------------------------------------


def test_matches_compare_by_count_and_as_a_list():
    found = _facts("mlp_grad").fusions()
    n = len(found)
    assert isinstance(found, Matches) and isinstance(found, list)
    assert found == n and found != n + 1 and found <= n and found >= n
    assert found < n + 1 and found > n - 1 and n + 1 > found and not found > n
    assert found == list(found) and found != list(found)[1:]
    assert (found == True) is False  # noqa: E712 - a bool is not a count
    assert bool(found) and not Matches("none", [])
    assert len(found.excerpts) == n and "fusions()" in found.query


def test_unknown_names_are_refused():
    facts = _facts("mlp_grad")
    with pytest.raises(FactsError, match="unknown fusion kind 'loop'"):
        facts.fusions(kind="loop")
    with pytest.raises(FactsError, match="unknown collective 'all_gather'"):
        facts.collectives("all_gather")
    with pytest.raises(FactsError, match="unknown stage"):
        facts.stage("optimised")  # type: ignore[arg-type]


# -- failure messages, through the opt-in plugin ------------------------------------------------

_USER_TEST = """
from pathlib import Path

from xla_inspect import hlo_facts

FACTS = hlo_facts(Path(__file__).with_name("module.txt").read_text())


def test_fusions():
    assert FACTS.fusions(kind="kLoop") == 0


def test_dots():
    assert 1 >= FACTS.instructions("dot")


def test_no_dot():
    assert not FACTS.instructions("dot")
"""


def _kloop_fusion(text: str) -> tuple[str, str]:
    """(name, one fused opcode) of a kLoop fusion, read by XLA's parser."""
    module = _hlo.hlo_module_from_text(text)
    by_name = {c.name: c for c in module.computations()}
    for computation in module.computations():
        for instruction in computation.instructions():
            printed = instruction.to_string()
            if " fusion(" in printed and "kind=kLoop" in printed:
                called = re.search(r"calls=%?([\w.\-]+)", printed)
                assert called is not None
                body = [i.to_string() for i in by_name[called[1]].instructions()]
                ops = [_PRINTED_OPCODE.search(b) for b in body]
                fused = [m[1] for m in ops if m and m[1] != "parameter"]
                return instruction.name, fused[0]
    raise AssertionError("no kLoop fusion in the module")


def test_failing_assertions_show_the_excerpt(pytester):
    text = _text(_compiled("mlp_grad")[1])
    name, fused_op = _kloop_fusion(text)
    dots = _xla(text)[0]["dot"]
    assert dots > 1
    (pytester.path / "module.txt").write_text(text)
    pytester.makepyfile(test_user=_USER_TEST)
    result = pytester.runpytest("-p", "no:cacheprovider", "-vv")
    result.assert_outcomes(failed=3)
    out = result.stdout.str()
    result.stdout.fnmatch_lines(
        [
            "E   * text HLO fusions(kind='kLoop'): * found, asserted == 0",
            f"E  * ENTRY *: *%{name} = * fusion(*), kind=kLoop, *[[]fuses *{fused_op}*]",
            f"E  * %*= * {fused_op}(*",  # a line of its fused computation (-vv)
        ]
    )
    result.stdout.fnmatch_lines(
        [f"E   * text HLO instructions(opcode='dot'): {dots} found, asserted <= 1"]
    )
    no_dot = out.split("def test_no_dot")[-1]
    module = _hlo.hlo_module_from_text(text)
    for computation in module.computations():  # -vv: the one-line repr names every dot
        for instruction in computation.instructions():
            if " dot(" in instruction.to_string():
                assert f"{computation.name}: %{instruction.name} = " in no_dot, instruction.name
    assert "metadata=" not in out


def test_without_verbosity_one_line_per_match(pytester):
    text = _text(_compiled("mlp_grad")[1])
    name, _ = _kloop_fusion(text)
    (pytester.path / "module.txt").write_text(text)
    pytester.makepyfile(test_user=_USER_TEST)
    result = pytester.runpytest("-p", "no:cacheprovider", "-k", "test_fusions")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "E   * text HLO fusions(kind='kLoop'): * found, asserted == 0",
            f"E  * ENTRY *: %{name} = * fusion kLoop [[]fuses *]",
        ]
    )
    result.stdout.no_fnmatch_line("*Full output truncated*")


@pytest.mark.battery  # starts Python again in a subprocess: CI runs it once
def test_the_plugin_comes_with_the_package_and_imports_no_jax(pytester):
    entry_points = importlib.metadata.entry_points(group="pytest11")
    assert [e.value for e in entry_points if e.value.startswith("xla_inspect")] == [
        "xla_inspect.pytest_plugin"
    ]
    pytester.makepyfile("def test_fixture(hlo_facts):\n    assert callable(hlo_facts)\n")
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    code = "import sys, xla_inspect.pytest_plugin; print('jax' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
