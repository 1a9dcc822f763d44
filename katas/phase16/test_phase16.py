"""Phase 16 tests: Inductor's generated code beside XLA's optimized HLO for the same programs.

The reading tasks run on the generated code recorded in katas/phase16/recorded/ (so they run
without the ``torch`` group), on a module written by hand (programs.HANDWRITTEN: what the
recordings never show), and on fresh variants of each (kata_harness.inductor.variant: buffers,
inputs and kernel numbers renamed, kernel definitions reordered); the HLO side is the JAX twin
compiled now by XLA on this host, its metamorphic variants (kata_harness.metamorphic: renamed,
reordered, every fused computation moved into a nested fusion) and hand-written modules
(programs.HANDWRITTEN_HLO). Expected values come from kata_harness.inductor's line reader of the
generated code and from XLA's own parser. The predict task is checked against the recorded MLPs
(also with their rows under other leading dimensions) and, when torch is installed, against
three MLPs drawn fresh and compiled live: several rows, one row, one input feature. The decide
task compiles live and skips, naming the group, without it.
"""

import math
import random
import sys
import zlib
from functools import cache

import pytest
from pytest_check import check

import katas.phase16.programs as P
from kata_harness import inductor as oracle
from kata_harness import metamorphic
from xla_inspect import inductor_capture

LIVE_TIMEOUT = 600  # a first compile with an empty Inductor cache takes about a minute here
BIAS_BANK = (
    "dense_relu",
    "dense_tanh_nobias",
    "bias_after_relu",
    "dense_sigmoid_3d",
    "dense_linear",
    "addmm_gelu",
    "attention",
)


def _live() -> None:
    """Skip without torch; otherwise Inductor's cache in the checkout and one compile worker,
    set before this process imports torch."""
    missing = inductor_capture.missing()
    if missing is not None:
        pytest.skip(f"needs: {inductor_capture.INSTALL} ({missing})")
    inductor_capture.prepare_environment(P.CACHE_DIR)


@cache
def _hlo(name: str) -> str:
    return P.HANDWRITTEN_HLO[name] if name in P.HANDWRITTEN_HLO else P.jax_hlo(name)


@cache
def _hlo_forms(name: str) -> tuple[tuple[str, str], ...]:
    """(label, text): the module as printed, its metamorphic variants, and the module with
    every fused computation one nested fusion further down."""
    seed = zlib.crc32(name.encode())
    found = [(name, _hlo(name))]
    found += [
        (f"{name} ({v.kind}, seed {seed})", v.text) for v in metamorphic.variants(_hlo(name), seed)
    ]
    deeper = metamorphic.nested(_hlo(name))
    assert deeper is not None, f"{name}: XLA's parser refused the nested variant"
    return (*found, (f"{name} (nested)", deeper.text))


def _code_forms(code: str, label: str, rng: random.Random) -> list[tuple[str, str]]:
    """(label, text): the generated code as recorded, then two variants drawn from `rng`."""
    return [(label, code)] + [(f"{label} (variant {i})", oracle.variant(code, rng)) for i in (1, 2)]


def _kernels(code: str) -> list[str]:
    return [c.name if c.kind != "fused" else oracle.fused_ops(c.name) for c in oracle.calls(code)]


def _census(hlo: str, code: str) -> dict[str, dict[str, int]]:
    xla = {"library": 0, "fused": 0}
    for k in oracle.xla_kernels(hlo):
        if k.opcode in ("dot", "custom-call") or (k.opcode == "fusion" and k.kind == "kCustom"):
            xla["library"] += 1
        elif k.opcode == "fusion":
            xla["fused"] += 1
    calls = oracle.calls(code)
    fused = sum(c.kind == "fused" for c in calls)
    return {"xla": xla, "inductor": {"library": len(calls) - fused, "fused": fused}}


GRAPHS = [(name, i) for name in P.recorded_names() for i in range(len(P.recorded(name)))]


# ---- task 1 -------------------------------------------------------------------------------


@pytest.mark.task("inductor_kernels")
def test_inductor_kernels_of_recorded_code(kata, fresh):
    for name, graph in GRAPHS:
        code = P.recorded(name)[graph]
        for label, text in _code_forms(code, f"{name} graph {graph}", fresh):
            got = kata.inductor_kernels(text)
            assert got == _kernels(text), f"{label}: kernels differ ({fresh.where()})"


@pytest.mark.task("inductor_kernels")
def test_inductor_kernels_of_handwritten_code(kata, fresh):
    for label, text in _code_forms(P.HANDWRITTEN, "handwritten", fresh):
        got = kata.inductor_kernels(text)
        assert got == _kernels(text), f"{label}: kernels differ ({fresh.where()})"


# ---- task 2 -------------------------------------------------------------------------------


def _pairs(names, fresh):
    """(label, hlo, code) for each program: each HLO form with a form of the generated code."""
    for name in names:
        codes = _code_forms(P.recorded(name)[0], name, fresh)
        for i, (label, hlo) in enumerate(_hlo_forms(name)):
            code_label, text = codes[i % len(codes)]
            yield f"{label} with {code_label}", hlo, text


@pytest.mark.task("kernel_census")
def test_kernel_census_of_both_compilers(kata, fresh):
    for label, hlo, text in _pairs(P.PAIRS, fresh):
        got = kata.kernel_census(hlo, text)
        assert got == _census(hlo, text), f"{label}: census differs"


@pytest.mark.task("kernel_census")
def test_kernel_census_of_other_spellings(kata, fresh):
    for hlo_name in P.HANDWRITTEN_HLO:
        for label, hlo in _hlo_forms(hlo_name):
            for code_label, text in _code_forms(P.HANDWRITTEN, "handwritten", fresh):
                got = kata.kernel_census(hlo, text)
                assert got == _census(hlo, text), f"{label} with {code_label}: census differs"


@pytest.mark.task("kernel_census")
def test_kernel_census_teaches_the_mlp_and_layernorm_counts(kata):
    # the facts the README states, on this host's XLA and the recorded torch 2.15 code
    mlp = kata.kernel_census(_hlo("mlp_gelu"), P.recorded("mlp_gelu")[0])
    ln = kata.kernel_census(_hlo("layernorm_softmax"), P.recorded("layernorm_softmax")[0])
    with check:
        assert mlp["inductor"] == {"library": 2, "fused": 1}
    with check:
        assert ln["inductor"] == {"library": 0, "fused": 1}
    with check:
        assert sum(ln["xla"].values()) == len(oracle.xla_kernels(_hlo("layernorm_softmax")))


# ---- task 3 -------------------------------------------------------------------------------


def _bias_home(hlo: str, code: str) -> dict[str, str]:
    homes = {"xla": "none", "inductor": "none"}
    bias = oracle.rank1_parameters(hlo)
    if bias:
        kernel = next(k for k in oracle.xla_kernels(hlo) if bias[0] in k.operands)
        homes["xla"] = "library" if kernel.holds_dot else "fused"
    sizes = oracle.asserted_sizes(code)
    name = next((n for n in oracle.inputs(code) if len(sizes.get(n, ())) == 1), None)
    if name is not None:
        call = next(c for c in oracle.calls(code) if name in _words(c.line))
        homes["inductor"] = "fused" if call.kind == "fused" else "library"
    return homes


def _words(line: str) -> set[str]:
    return set(line.replace("(", " ").replace(",", " ").replace(")", " ").split())


@pytest.mark.task("bias_homes")
def test_bias_homes_of_both_compilers(kata, fresh):
    for label, hlo, text in _pairs(BIAS_BANK, fresh):
        got = kata.bias_homes(hlo, text)
        assert got == _bias_home(hlo, text), f"{label}: bias homes differ"


@pytest.mark.task("bias_homes")
def test_bias_homes_when_xla_keeps_the_bias_with_the_product(kata, fresh):
    for hlo_name in P.HANDWRITTEN_HLO:
        for label, hlo in _hlo_forms(hlo_name):
            for code_name in ("dense_relu", "bias_after_relu"):
                text = oracle.variant(P.recorded(code_name)[0], fresh)
                got = kata.bias_homes(hlo, text)
                want = _bias_home(hlo, text)
                assert got == want, f"{label} with {code_name}: bias homes differ"


# ---- task 4 -------------------------------------------------------------------------------


def _reductions(hlo: str, code: str) -> dict[str, list[int]]:
    sources = oracle.kernel_sources(code)
    inductor = [
        oracle.accumulators(sources[c.name]) if c.kind == "fused" else 0 for c in oracle.calls(code)
    ]
    return {"xla": [k.reductions for k in oracle.xla_kernels(hlo)], "inductor": inductor}


@pytest.mark.task("reductions_per_kernel")
def test_reductions_per_kernel_of_both_compilers(kata, fresh):
    for label, hlo, text in _pairs(P.PAIRS, fresh):
        got = kata.reductions_per_kernel(hlo, text)
        assert got == _reductions(hlo, text), f"{label}: reductions differ"


@pytest.mark.task("reductions_per_kernel")
def test_reductions_per_kernel_of_training_graphs(kata, fresh):
    hlo = _hlo_forms("layernorm_softmax")[-1][1]  # nested one level further down
    for name in P.TRAIN:
        for code in P.recorded(name):
            text = oracle.variant(code, fresh)
            got = kata.reductions_per_kernel(hlo, text)
            assert got == _reductions(hlo, text), f"{name}: reductions differ ({fresh.where()})"


@pytest.mark.task("reductions_per_kernel")
def test_reductions_per_kernel_of_handwritten_code(kata, fresh):
    for label, text in _code_forms(P.HANDWRITTEN, "handwritten", fresh):
        for hlo_name in P.HANDWRITTEN_HLO:
            for hlo_label, hlo in _hlo_forms(hlo_name):
                got = kata.reductions_per_kernel(hlo, text)
                assert got == _reductions(hlo, text), f"{hlo_label} with {label}: differ"


@pytest.mark.task("reductions_per_kernel")
def test_one_kernel_holds_every_reduction_of_layernorm_softmax(kata):
    got = kata.reductions_per_kernel(_hlo("layernorm_softmax"), P.recorded("layernorm_softmax")[0])
    with check:
        assert got["inductor"] == [4], "mean, variance, max and sum in one C++ kernel"
    with check:
        assert max(got["xla"]) == 1, "no XLA:CPU kernel holds two reductions"


# ---- task 5 -------------------------------------------------------------------------------


def _train(codes: list[str]) -> dict[str, int]:
    backward = [c for c in codes if any(n.startswith("tangents_") for n in oracle.inputs(c))]
    forward = [c for c in codes if c not in backward]
    assert len(backward) == 1 and len(forward) == 1
    saved = [n for n in oracle.inputs(backward[0]) if not n.startswith("tangents_")]
    return {
        "forward": len(oracle.calls(forward[0])),
        "backward": len(oracle.calls(backward[0])),
        "saved": len(saved),
    }


@pytest.mark.task("train_graphs")
def test_train_graphs_in_any_order(kata, fresh):
    for name in P.TRAIN:
        codes = P.recorded(name)
        for order in (codes, codes[::-1]):
            texts = [oracle.variant(c, fresh) for c in order]
            got = kata.train_graphs(texts)
            assert got == _train(texts), f"{name}: graphs read wrong ({fresh.where()})"


@pytest.mark.task("train_graphs")
def test_train_graphs_mlp_facts(kata):
    got = kata.train_graphs(P.recorded("train_mlp_gelu")[::-1])
    assert got == {"forward": 4, "backward": 6, "saved": 5}, "the README's figures"


# ---- task 6 -------------------------------------------------------------------------------


def _torch_compiles() -> int:
    """Graphs torch.compile has compiled in this process (0 before torch is imported): the
    harness refuses JAX's compiler to a prediction, this catches Inductor's."""
    dynamo = sys.modules.get("torch._dynamo.utils")
    return 0 if dynamo is None else int(dynamo.counters["stats"]["unique_graphs"])


def _predicted(kata, shape, layers):
    before = _torch_compiles()
    got = kata.predict_inductor_kernels(shape, list(layers))
    assert _torch_compiles() == before, "a prediction comes from the layers, not torch.compile"
    return got


def _resplit(shape: tuple[int, ...], rng) -> tuple[int, ...]:
    """The same rows under other leading dimensions: a linear layer flattens them into one."""
    rows = math.prod(shape[:-1])
    first = rng.choice([d for d in range(1, rows + 1) if rows % d == 0])
    options = [(rows,), (first, rows // first), (rows // first, 1, first)]
    return rng.choice([o for o in options if o != shape[:-1]]) + shape[-1:]


@pytest.mark.task("predict_inductor_kernels")
def test_predict_inductor_kernels_on_recorded_mlps(kata, fresh):
    names = sorted(P.MLP_CASES)
    fresh.shuffle(names)
    for name in names:
        shape, layers = P.MLP_CASES[name]
        want = _census(_hlo("dense_linear"), P.recorded(name)[0])["inductor"]
        for given in (shape, _resplit(shape, fresh)):
            got = _predicted(kata, given, layers)
            assert got == want, f"x{list(given)}, {P.what(name)}: predicted {got} ({fresh.where()})"


def _one_row(rng) -> tuple[tuple[int, ...], list]:
    """One input row (a batch of one): the first product small enough to be decomposed."""
    shape = rng.choice([(1,), (1, 1)]) + (rng.randint(2, 16),)
    first = (rng.randint(1, 16), True, rng.choice(P.ACTIVATIONS))
    return shape, [first] + _layers(rng, 0, 3)


def _one_feature(rng) -> tuple[tuple[int, ...], list]:
    """One input feature: a product with no bias and few elements is a broadcast multiply."""
    shape = rng.choice([(rng.randint(2, 12),), (rng.randint(1, 3), rng.randint(2, 4))]) + (1,)
    first = (rng.randint(2, 32 - math.prod(shape)), False, rng.choice(P.ACTIVATIONS))
    return shape, [first] + _layers(rng, 0, 3)


def _several_rows(rng) -> tuple[tuple[int, ...], list]:
    shape = tuple(rng.randint(1, 6) for _ in range(rng.randint(1, 2)))
    return shape + (rng.randint(2, 24),), _layers(rng, 1, 4)


def _layers(rng, least: int, most: int) -> list:
    return [
        (rng.randint(1, 24), rng.random() < 0.5, rng.choice(P.ACTIVATIONS))
        for _ in range(rng.randint(least, most))
    ]


@pytest.mark.task("predict_inductor_kernels")
@pytest.mark.timeout(LIVE_TIMEOUT)
def test_predict_inductor_kernels_on_fresh_mlps(kata, fresh):
    """A fresh MLP of each kind, compiled by Inductor now: several rows, one row, one feature."""
    _live()
    import torch  # pyright: ignore[reportMissingImports]  (the torch group)

    for draw in (_several_rows, _one_row, _one_feature):
        shape, layers = draw(fresh)
        got = _predicted(kata, shape, layers)
        widths = [shape[-1]] + [out for out, _, _ in layers]
        args = [torch.ones(shape)]
        for (out, bias, _), width in zip(layers, widths, strict=False):
            args += [torch.ones(out, width)] + ([torch.ones(out)] if bias else [])
        mlp = P.torch_mlp(tuple(layers))
        codes = inductor_capture.generated_code(mlp, *args, cache_dir=P.CACHE_DIR)
        want = _census(_hlo("dense_linear"), codes[0])["inductor"]
        assert got == want, f"x{list(shape)}, layers {layers}: predicted {got} ({fresh.where()})"


# ---- task 7 -------------------------------------------------------------------------------


@pytest.mark.task("inference_call")
@pytest.mark.timeout(LIVE_TIMEOUT)
def test_inference_call_compiles_one_inference_graph(kata, fresh):
    _live()
    import torch  # pyright: ignore[reportMissingImports]  (the torch group)
    import torch._dynamo  # pyright: ignore[reportMissingImports]  (the torch group)
    from torch._inductor.utils import run_and_get_code  # pyright: ignore[reportMissingImports]  (the torch group)

    torch.manual_seed(fresh.randint(0, 2**31))
    width, hidden = fresh.randint(4, 24), fresh.randint(4, 24)
    model = torch.nn.Sequential(
        torch.nn.Linear(width, hidden), torch.nn.GELU(), torch.nn.Linear(hidden, 3)
    )
    x = torch.randn(fresh.randint(1, 9), width)
    torch._dynamo.reset()
    out, codes = run_and_get_code(kata.inference_call, torch.compile(model), x)
    with check:
        frozen = [n for n, p in model.named_parameters() if not p.requires_grad]
        assert not frozen, f"the call changed the caller's module: {frozen} no longer require grad"
    with torch.no_grad():
        eager = model(x)
    assert len(codes) == 1, f"{len(codes)} graphs compiled: the compiled module must run one"
    names = oracle.inputs(codes[0])
    with check:
        assert not any(n.startswith(("primals_", "tangents_")) for n in names), "a training graph"
    with check:
        assert codes[0].count("\n        return (") == 1
        returned = codes[0].split("\n        return (", 1)[1].split(")\n", 1)[0]
        assert returned.count(",") == 1, f"the graph returns more than its output: ({returned})"
    with check:
        assert isinstance(out, torch.Tensor) and not out.requires_grad
    with check:
        assert isinstance(out, torch.Tensor) and torch.allclose(out, eager, atol=1e-5)
