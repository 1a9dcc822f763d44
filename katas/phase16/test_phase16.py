"""Phase 16 tests of the reading tasks: Inductor's generated code beside XLA's optimized HLO.

They run on the generated code recorded in katas/phase16/recorded/ (so they run without the
``torch`` group; among them a convolution, a Cholesky factorization's fallbacks, argmax and
var_mean accumulators, a product decomposed into a fused kernel, layers taking a scalar (f32[],
size ()) instead of a bias or beside one, profiled modules (inference and training) whose
`call` runs inside `with record_function(...)`, training steps returning more than their
loss, of a convolution, of inputs that all require grad, and one compiled with dynamic=True,
whose backward takes size symbols it never asserts among its saved inputs), on modules written
by hand (handwritten.HANDWRITTEN and HANDWRITTEN_ROWS: what the recordings never show), and on fresh
variants of each (kata_harness.inductor.variant: buffers, inputs and kernel numbers renamed,
in one variant to names that are parts of one another, an input's name inside every buffer's,
inputs unpacked in another order, kernel calls nested in blocks (also their else: and finally:
branches), comments such as the `# AOT ID` header dropped or kept, kernel definitions reordered;
kata_harness.inductor_spellings: fused kernels named after other operators, some ending in a
digit as `expm1`, two of them one named the other's name with a digit more, as `cpp_fused_sum_1`
beside `cpp_fused_sum_10` defined before it, fallbacks calling other ATen operators, one of them
a view as `view.dtype`, accumulators declared with the other C++ types Inductor declares, as
`uint8_t`; kata_harness.inductor.repeated: a training graph running a fused kernel twice); the
HLO side is the JAX twin compiled now by XLA on this host (the bias task also in bfloat16), its
metamorphic variants (kata_harness.metamorphic: renamed, reordered, a computation nothing calls
printed after ENTRY, every fused computation moved into a nested fusion, and for the counting
tasks ENTRY fusions copied beside themselves, calling one computation), hand-written modules
(handwritten.HANDWRITTEN_HLO) and JAX programs with no PyTorch twin (xla_only.XLA_ONLY: an
int32 layer, a bias passed first, a loop, a cond, two scatters: a `to_apply=` that is no
reduction). Expected values come from kata_harness.inductor's line reader of the generated code
and from XLA's own parser.
The predict and decide tasks are in test_phase16_live.py.
"""

import itertools
import random
import zlib
from functools import cache

import jax.numpy as jnp
import pytest
from pytest_check import check

import katas.phase16.programs as P
from kata_harness import inductor as oracle
from kata_harness import inductor_spellings, metamorphic
from katas.phase16.handwritten import HANDWRITTEN, HANDWRITTEN_HLO, HANDWRITTEN_ROWS
from katas.phase16.handwritten_train import HANDWRITTEN_TRAIN, HANDWRITTEN_TRAIN_TWO_OUTPUTS
from katas.phase16.xla_only import LAYERS, XLA_ONLY, xla_hlo

BIAS_BANK = (
    "dense_relu",
    "dense_tanh_nobias",
    "bias_after_relu",
    "dense_sigmoid_3d",
    "dense_linear",
    "addmm_gelu",
    "attention",
    "dense_relu_row",
    "dense_one_output",
    "dense_relu_scaled",
    "dense_scaled_residual",
)


# the Inductor modules written by hand; the HLO modules no float32 twin of PAIRS shows
CODES = {"handwritten": HANDWRITTEN, "handwritten_rows": HANDWRITTEN_ROWS}
TRAIN_CODES = {
    "handwritten_forward": HANDWRITTEN_TRAIN[0],
    "handwritten_backward": HANDWRITTEN_TRAIN[1],
}
OTHER_HLO = (*HANDWRITTEN_HLO, *XLA_ONLY)


@cache
def _hlo(name: str) -> str:
    if name in HANDWRITTEN_HLO:
        return HANDWRITTEN_HLO[name]
    return xla_hlo(name) if name in XLA_ONLY else P.jax_hlo(name)


@cache
def _hlo_forms(name: str) -> tuple[tuple[str, str], ...]:
    """(label, text): the module as printed, its metamorphic variants, the module with a
    computation nothing calls printed after ENTRY, and the module with every fused computation
    one nested fusion further down."""
    seed = zlib.crc32(name.encode())
    found = [(name, _hlo(name))]
    found += [
        (f"{name} ({v.kind}, seed {seed})", v.text) for v in metamorphic.variants(_hlo(name), seed)
    ]
    after = metamorphic.trailing(_hlo(name), random.Random(seed))
    assert after is not None, f"{name}: XLA's parser refused an uncalled computation after ENTRY"
    found.append((f"{name} ({after.kind}, seed {seed})", after.text))
    deeper = metamorphic.nested(_hlo(name))
    if not any(k.opcode == "fusion" for k in oracle.xla_kernels(_hlo(name))):
        return tuple(found)  # no ENTRY fusion to nest (a loop: ENTRY holds the while)
    assert deeper is not None, f"{name}: XLA's parser refused the nested variant"
    return (*found, (f"{name} (nested)", deeper.text))


def _variant(
    code: str, rng: random.Random, comments: bool | None = None, overlapping: bool | None = None
) -> str:
    """A fresh variant of generated code: renamed (with `overlapping`, names that are parts of
    others'), reordered, nested, and respelled (its fused kernels named after other operators,
    its accumulators declared with other C++ types)."""
    return inductor_spellings.respelled(oracle.variant(code, rng, comments, overlapping), rng)


def _code_forms(code: str, label: str, rng: random.Random) -> list[tuple[str, str]]:
    """(label, text): the generated code as recorded, then two variants drawn from `rng`, the
    second's names parts of one another (an input's name inside every buffer's)."""
    return [(label, code)] + [
        (f"{label} (variant {i})", _variant(code, rng, overlapping=i == 2)) for i in (1, 2)
    ]


def _kernels(code: str) -> list[str]:
    return [c.name if c.kind != "fused" else oracle.fused_ops(c.name) for c in oracle.calls(code)]


GRAPHS = [(name, i) for name in P.recorded_names() for i in range(len(P.recorded(name)))]


# ---- task 1 -------------------------------------------------------------------------------


# the first test of the phase pays for loading it (torch is imported then, seconds under load):
# the cheaper of the two runs first


@pytest.mark.task("inductor_kernels")
def test_inductor_kernels_of_handwritten_code(kata, fresh):
    for name, code in [*CODES.items(), *TRAIN_CODES.items()]:
        for label, text in _code_forms(code, name, fresh):
            got = kata.inductor_kernels(text)
            assert got == _kernels(text), f"{label}: kernels differ ({fresh.where()})"


def _layout(code: str) -> tuple:
    """What a variant of `code` keeps of it once renamed and respelled: the kinds of its kernel
    calls (and the library and fallback names), where `call` is defined, and its blocks."""
    kernels = tuple((c.kind, c.name if c.kind != "fused" else "") for c in oracle.calls(code))
    body = oracle.call_body(code)
    blocks = tuple(line.split()[0] for line in body if line.rstrip().endswith(":"))
    return kernels, "def call(self" in code, blocks


@pytest.mark.task("inductor_kernels")
def test_inductor_kernels_of_recorded_code(kata, fresh):
    """Every recorded graph as recorded; fresh variants of one graph of each layout (the 22
    recorded MLPs share a handful: variants of the others would read the same)."""
    varied: set[tuple] = set()
    for name, graph in GRAPHS:
        code = P.recorded(name)[graph]
        label = f"{name} graph {graph}"
        forms = [(label, code)]
        if _layout(code) not in varied:
            varied.add(_layout(code))
            forms = _code_forms(code, label, fresh)
        for label, text in forms:
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
        assert got == oracle.census(hlo, text), f"{label}: census differs"


@pytest.mark.task("kernel_census")
def test_kernel_census_of_other_spellings(kata, fresh):
    codes = [*CODES.items()] + [(n, P.recorded(n)[0]) for n in P.MARKED]
    for hlo_name in OTHER_HLO:
        for i, (label, hlo) in enumerate(_hlo_forms(hlo_name)):
            code_name, code = codes[i % len(codes)]
            for code_label, text in _code_forms(code, code_name, fresh):
                got = kata.kernel_census(hlo, text)
                assert got == oracle.census(hlo, text), f"{label} with {code_label}: census differs"


def _twinned(hlo: str, fresh: random.Random) -> tuple[str, list[str]]:
    """`hlo` with a drawn kCustom ENTRY fusion and a drawn other ENTRY fusion each copied beside
    itself, the copy calling the same computation (metamorphic.shared: each one with a later
    user in ENTRY that the copy takes over, where the module has one); and the names copied."""
    fusions = [k for k in oracle.xla_kernels(hlo) if k.opcode == "fusion"]
    copied = []
    for library in (True, False):
        names = [k.name for k in fusions if (k.kind == "kCustom") == library]
        for name in fresh.sample(names, len(names)):
            twin = metamorphic.shared(hlo, name)
            if twin is not None:
                hlo = twin.text
                copied.append(name)
                break
    return hlo, copied


@pytest.mark.task("kernel_census")
def test_kernel_census_of_two_fusions_calling_one_computation(kata, fresh):
    """Each ENTRY fusion counts, also one calling the computation another one calls (XLA
    reuses a fused computation): a drawn form of each program with a library (kCustom) fusion
    and a loop fusion copied beside themselves, where it has such with a later user."""
    codes = [(n, P.recorded(n)[0]) for n in P.PAIRS] + [*CODES.items()]
    for i, name in enumerate([*P.PAIRS, *OTHER_HLO]):
        form, hlo = fresh.choice(_hlo_forms(name))
        twin, copied = _twinned(hlo, fresh)
        if not copied:
            continue  # no ENTRY fusion with a later user (a loop: ENTRY holds the while)
        code_name, code = codes[i % len(codes)]
        text = _variant(code, fresh)
        got = kata.kernel_census(twin, text)
        pairs = ", ".join(f"%{n} copied as %{n}.twin" for n in copied)
        assert got == oracle.census(twin, text), (
            f"{form} with {pairs} (each pair calling one computation), with {code_name}: "
            f"census differs ({fresh.where()})"
        )


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
def test_bias_homes_of_bfloat16_layers(kata, fresh):
    """The JAX twins on bfloat16 arrays: the bias parameter is bf16[n], still the only rank-1
    parameter."""
    for name in BIAS_BANK:
        hlo = P.jax_hlo(name, jnp.bfloat16)
        text = _variant(P.recorded(name)[0], fresh)
        got = kata.bias_homes(hlo, text)
        assert got == _bias_home(hlo, text), f"{name} in bfloat16: bias homes differ"


@pytest.mark.task("bias_homes")
def test_bias_homes_of_other_spellings(kata, fresh):
    """XLA keeping the bias with the product (hand-written), an integer twin and a bias written
    first; Inductor handing the bias to the GEMM through a view (hand-written)."""
    codes = [(n, P.recorded(n)[0]) for n in ("dense_relu", "bias_after_relu")]
    codes += CODES.items()
    forms = [form for name in (*HANDWRITTEN_HLO, *LAYERS) for form in _hlo_forms(name)]
    for i, (label, hlo) in enumerate(forms):
        code_name, code = codes[i % len(codes)]
        text = _variant(code, fresh)
        got = kata.bias_homes(hlo, text)
        assert got == _bias_home(hlo, text), f"{label} with {code_name}: bias homes differ"


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
            text = _variant(code, fresh)
            got = kata.reductions_per_kernel(hlo, text)
            assert got == _reductions(hlo, text), f"{name}: reductions differ ({fresh.where()})"


@pytest.mark.task("reductions_per_kernel")
def test_reductions_per_kernel_of_handwritten_code(kata, fresh):
    codes = [*CODES.items(), *TRAIN_CODES.items()]
    texts = [form for name, code in codes for form in _code_forms(code, name, fresh)]
    forms = [form for name in OTHER_HLO for form in _hlo_forms(name)]
    for i, (hlo_label, hlo) in enumerate(forms):  # more forms than texts: each text is read
        label, text = texts[i % len(texts)]
        got = kata.reductions_per_kernel(hlo, text)
        assert got == _reductions(hlo, text), f"{hlo_label} with {label}: differ"


@pytest.mark.task("reductions_per_kernel")
def test_reductions_per_kernel_of_two_fusions_calling_one_computation(kata, fresh):
    """Each ENTRY kernel counts what its own `calls=` reach, even when another kernel reached
    the same computation first: one ENTRY fusion (drawn, one that reduces where there is one)
    copied beside itself, both calling one computation (as printed, or nested one further)."""
    codes = [(n, P.recorded(n)[0]) for n in P.PAIRS] + [*CODES.items(), *TRAIN_CODES.items()]
    for i, name in enumerate([*P.PAIRS, *OTHER_HLO]):
        fusions = [k for k in oracle.xla_kernels(_hlo(name)) if k.opcode == "fusion"]
        reducing = [k for k in fusions if k.reductions] or fusions
        if not reducing:
            continue  # no ENTRY fusion (a loop: ENTRY holds the while)
        kernel = fresh.choice(reducing).name
        form, hlo = fresh.choice([_hlo_forms(name)[0], _hlo_forms(name)[-1]])
        twin = metamorphic.shared(hlo, kernel)
        if twin is None:
            continue  # no later user in ENTRY to hand to the copy
        code_name, code = codes[i % len(codes)]
        text = _variant(code, fresh)
        got = kata.reductions_per_kernel(twin.text, text)
        expected = _reductions(twin.text, text)
        assert got == expected, (
            f"{form} with %{kernel} copied as %{kernel}.twin (both calling one computation), "
            f"with {code_name}: reductions differ ({fresh.where()})"
        )


@pytest.mark.task("reductions_per_kernel")
def test_reductions_per_kernel_of_fusions_nested_deep(kata, fresh):
    """`calls=` is followed however deep it goes: every fused computation ENTRY calls moved
    two to four (drawn) nested fusions further down, each program's reductions with it."""
    codes = [(n, P.recorded(n)[0]) for n in P.PAIRS] + [*CODES.items(), *TRAIN_CODES.items()]
    for i, name in enumerate([*P.PAIRS, *OTHER_HLO]):
        if not any(k.opcode == "fusion" for k in oracle.xla_kernels(_hlo(name))):
            continue  # no ENTRY fusion to nest (a loop: ENTRY holds the while)
        depth, hlo = fresh.randint(2, 4), _hlo(name)
        for _ in range(depth):
            deeper = metamorphic.nested(hlo)
            assert deeper is not None, f"{name}: XLA's parser refused the nested variant"
            hlo = deeper.text
        code_name, code = codes[i % len(codes)]
        text = _variant(code, fresh)
        got = kata.reductions_per_kernel(hlo, text)
        assert got == _reductions(hlo, text), (
            f"{name} nested {depth} fusions further down, with {code_name}: reductions differ "
            f"({fresh.where()})"
        )


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
    """Forward first or backward first, with their comments (the `# AOT ID` header naming each
    graph) or without: the graphs are told apart by their inputs. The recorded steps (one
    compiled with dynamic=True: the forward saves size symbols, which the backward takes among
    its inputs and binds as `s77 = primals_1` without asserting them: they count), and two
    written by hand whose backward runs a fallback as a bare statement, the second for a
    function of two outputs (two gradients in, tangents_1 and tangents_2: neither is saved).
    In one form of each step one graph (drawn) runs one of its fused kernels twice: a kernel
    counts each time `call` runs it."""
    steps = {name: P.recorded(name) for name in P.TRAIN} | {"handwritten": [*HANDWRITTEN_TRAIN]}
    forms = {
        name: list(itertools.product((codes, codes[::-1]), (True, False)))
        for name, codes in steps.items()
    }
    two = [*HANDWRITTEN_TRAIN_TWO_OUTPUTS]  # one drawn form: the others vary order and comments
    forms["handwritten, two outputs"] = [(fresh.choice((two, two[::-1])), fresh.random() < 0.5)]
    for name, cases in forms.items():
        twice = fresh.randrange(len(cases))  # in one form, one graph runs a fused kernel twice
        for k, (order, comments) in enumerate(cases):
            texts = [_variant(c, fresh, comments) for c in order]
            where = ""
            if k == twice:
                g = fresh.randrange(len(texts))
                repeated = oracle.repeated(texts[g], fresh)
                if repeated is not None:
                    texts[g], where = repeated, f", graph {g + 1} running a fused kernel twice"
            got = kata.train_graphs(texts)
            dynamic = name in P.TRAIN and P.TRAIN[name].dynamic
            kind = " (dynamic=True: size symbols among the saved inputs)" if dynamic else ""
            assert got == _train(texts), f"{name}{kind}{where}: graphs read wrong ({fresh.where()})"


@pytest.mark.task("train_graphs")
def test_train_graphs_mlp_facts(kata):
    got = kata.train_graphs(P.recorded("train_mlp_gelu")[::-1])
    assert got == {"forward": 4, "backward": 6, "saved": 5}, "the README's figures"
