"""Phase 16 tests of the predict and decide tasks: Inductor's kernels for an MLP, and the call
that makes Inductor compile an inference graph.

The predict task is checked against the recorded MLPs (also with their rows under other leading
dimensions, one of them a leading 1, and behind two or three leading ones) and, when torch is
installed, against three MLPs drawn fresh and compiled live: several rows (among the layers
one to one output with a bias), one row (a small weight with a bias or none, then three GEMMs
to more than 16 outputs, two of them on one feature, one with a bias and one without, each
followed by a layer to one output, two with a bias and one without, then a small weight with
a bias on that one feature), one input feature (a bias or none, rows plus outputs on either
side of 32). The decide task compiles live, through a backend that counts what the caller's
compiled module hands to Inductor (then once more with the module in eval mode; x requiring
grad in one of the two calls, a plain tensor in the other; one layer, drawn, in the mode the
module is not in, whose own mode must be kept too), after a first compile that sets up
torch's tracing, compares every output with the module's eager float32 output (dtype first),
and skips, naming the group, without torch.
"""

import math
import sys

import pytest
from pytest_check import check

import katas.phase16.programs as P
from kata_harness import inductor as oracle
from xla_inspect import inductor_capture

LIVE_TIMEOUT = 600  # a first compile with an empty Inductor cache takes about a minute here


def _live() -> None:
    """Skip without torch; otherwise Inductor's cache in the checkout and one compile worker,
    set before this process imports torch."""
    missing = inductor_capture.missing()
    if missing is not None:
        pytest.skip(f"needs: {inductor_capture.INSTALL} ({missing})")
    inductor_capture.prepare_environment(P.CACHE_DIR)


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
    options = [(rows,), (1, rows), (first, rows // first), (rows // first, 1, first)]
    return rng.choice([o for o in options if o != shape[:-1]]) + shape[-1:]


def _behind_ones(shape: tuple[int, ...], rng) -> tuple[int, ...]:
    """The same rows as the last of three or four leading dimensions (a batch of one, one head):
    the rows are every leading dimension's product, not that of the first ones."""
    return (1,) * rng.choice((2, 3)) + (math.prod(shape[:-1]), shape[-1])


@pytest.mark.task("predict_inductor_kernels")
def test_predict_inductor_kernels_on_recorded_mlps(kata, fresh):
    names = sorted(P.MLP_CASES)
    fresh.shuffle(names)
    for name in names:
        shape, layers = P.MLP_CASES[name]
        want = oracle.kernel_kinds(P.recorded(name)[0])
        for given in (shape, _resplit(shape, fresh), _behind_ones(shape, fresh)):
            got = _predicted(kata, given, layers)
            assert got == want, f"x{list(given)}, {P.what(name)}: predicted {got} ({fresh.where()})"


def _one_row(rng) -> tuple[tuple[int, ...], list]:
    """One input row (a batch of one), the clauses of the rule on it: a small weight (at most
    16 x 16) with a bias or none, then three times a GEMM to more than 16 outputs and an
    activation, each followed by a layer to one output (decomposed, merging into the
    activation's kernel): two with a bias (their weights wider than 16) and one without, in any
    order. The second and third GEMMs take one feature, one of them with a bias and one
    without (a GEMM on one row and one feature stays a GEMM, bias or not), so an answer that
    reads a clause's input for its output misses two layers one way and one the other and its
    count cannot come out even. Last a small weight with a bias on that one feature (one row
    and one feature: decomposed as any small weight with a bias on one row)."""
    shape = rng.choice([(1,), (1, 1)]) + (rng.randint(2, 16),)
    small = (rng.randint(2, 16), rng.random() < 0.5, rng.choice(P.ACTIVATIONS))
    ones = [(1, bias, rng.choice(P.ACTIVATIONS)) for bias in rng.sample([True, True, False], 3)]
    wide_biases = [rng.random() < 0.5, *rng.sample([True, False], 2)]
    layers = [small]
    for one, bias in zip(ones, wide_biases, strict=True):
        layers += [(rng.randint(17, 24), bias, rng.choice(P.ACTIVATIONS[1:])), one]
    return shape, layers + [(rng.randint(2, 16), True, rng.choice(P.ACTIVATIONS))]


def _one_feature(rng) -> tuple[tuple[int, ...], list]:
    """One input feature: a product with no bias whose rows plus outputs are at most 32 is a
    broadcast multiply. The rows are one or two leading dimensions, the outputs drawn on both
    sides of that limit, the first layer with or without a bias."""
    shape = rng.choice([(rng.randint(2, 24),), (rng.randint(2, 4), rng.randint(2, 8))]) + (1,)
    rows = math.prod(shape[:-1])
    out = rng.randint(max(2, 28 - rows), 36 - rows)
    first = (out, rng.random() < 0.5, rng.choice(P.ACTIVATIONS))
    return shape, [first] + _layers(rng, 0, 3)


def _several_rows(rng) -> tuple[tuple[int, ...], list]:
    """Two rows or more under one or two leading dimensions, and among the layers one to one
    output with a bias (a GEMM on several rows: the one-output rule needs one row)."""
    shape = tuple(rng.randint(1, 6) for _ in range(rng.randint(1, 2)))
    if math.prod(shape) == 1:
        shape = (rng.randint(2, 6), *shape[1:])
    layers = _layers(rng, 1, 4)
    layers.insert(rng.randint(0, len(layers)), (1, True, rng.choice(P.ACTIVATIONS)))
    return shape + (rng.randint(2, 24),), layers


def _lone_product(rng) -> tuple[tuple[int, ...], list]:
    """One input row, first a small weight with no activation (decomposed, and no kernel of an
    activation before it to merge into), then a GEMM to more than 16 outputs: the product's
    work is a kernel of its own before the library call, bias or not."""
    shape = rng.choice([(1,), (1, 1)]) + (rng.randint(2, 16),)
    first = (rng.randint(1, 16), rng.random() < 0.5, "none")
    gemm = (rng.randint(17, 24), rng.random() < 0.5, rng.choice(P.ACTIVATIONS))
    return shape, [first, gemm, *_layers(rng, 0, 2)]


def _layers(rng, least: int, most: int) -> list:
    return [
        (rng.randint(1, 24), rng.random() < 0.5, rng.choice(P.ACTIVATIONS))
        for _ in range(rng.randint(least, most))
    ]


@pytest.mark.task("predict_inductor_kernels")
@pytest.mark.timeout(LIVE_TIMEOUT)
def test_predict_inductor_kernels_on_fresh_mlps(kata, fresh):
    """A fresh MLP of each kind, compiled by Inductor now: several rows, one row, one feature,
    one row whose first layer is a lone product feeding a GEMM."""
    _live()
    import torch  # pyright: ignore[reportMissingImports]  (the torch group)

    for draw in (_several_rows, _one_row, _one_feature, _lone_product):
        shape, layers = draw(fresh)
        got = _predicted(kata, shape, layers)
        widths = [shape[-1]] + [out for out, _, _ in layers]
        args = [torch.ones(shape)]
        for (out, bias, _), width in zip(layers, widths, strict=False):
            args += [torch.ones(out, width)] + ([torch.ones(out)] if bias else [])
        mlp = P.torch_mlp(tuple(layers))
        codes = inductor_capture.generated_code(mlp, *args, cache_dir=P.CACHE_DIR)
        want = oracle.kernel_kinds(codes[0])
        assert got == want, f"x{list(shape)}, layers {layers}: predicted {got} ({fresh.where()})"


# ---- task 7 -------------------------------------------------------------------------------


@pytest.mark.task("inference_call")
@pytest.mark.timeout(LIVE_TIMEOUT)
def test_inference_call_compiles_one_inference_graph(kata, fresh):
    """The caller's compiled module, compiled through a backend that counts the graphs it hands
    to Inductor, runs one inference graph of its own MLP (the module's inputs, the caller's own
    parameters among them, its output only), x a plain tensor in one call and requiring grad in
    the other (which one is drawn; a leaf, or computed from one); x (its values, requires_grad
    and grad_fn), the module, its train mode and each submodule's own (one, drawn two or more
    levels down, is in the other mode) and the caller's grad mode are left as they were, also
    when the caller calls from inside torch.no_grad(), and a later call (the module in eval
    mode) runs an inference graph too."""
    _live()
    import torch  # pyright: ignore[reportMissingImports]  (the torch group)
    import torch._dynamo  # pyright: ignore[reportMissingImports]  (the torch group)
    from torch._functorch import config as functorch_config  # pyright: ignore[reportMissingImports]  (the torch group)
    from torch._inductor import config as inductor_config  # pyright: ignore[reportMissingImports]  (the torch group)
    from torch._inductor.compile_fx import compile_fx  # pyright: ignore[reportMissingImports]  (the torch group)
    from torch._inductor.utils import run_and_get_code  # pyright: ignore[reportMissingImports]  (the torch group)

    # a process's first compile sets up torch's tracing (its lazy handler leaves the
    # `torch.__trace` logger on its first record), and its first inference graph of a module
    # that Inductor compiles (not one its caches hold: a hit skips the passes) imports
    # Inductor's pattern passes (each module leaves its logger): here, not in the call the
    # harness watches
    torch.compile(lambda t: t + 1)(torch.ones(1))
    uncached = inductor_config.patch(fx_graph_cache=False)
    with torch.no_grad(), uncached, functorch_config.patch(enable_autograd_cache=False):
        torch.compile(torch.nn.Linear(2, 2))(torch.ones(1, 2))
    torch.set_grad_enabled(True)  # the caller's grad mode, whatever an earlier answer left
    torch.manual_seed(fresh.randint(0, 2**31))
    width, hidden = fresh.randint(4, 24), fresh.randint(4, 24)
    model = _nested_mlp(torch, width, hidden, fresh).train()
    # one module (drawn, two or more levels down) in eval mode inside the module in train
    # mode: a mode is each module's own, however deep
    _deep_module(model, fresh).eval()
    modes = _modes(model)
    handed = []
    own = {p.data_ptr() for p in model.parameters()}
    took = []  # per graph handed to Inductor: did its inputs hold the caller's own parameters?

    def backend(graph, example_inputs):
        handed.append(graph)
        ptrs = {t.data_ptr() for t in example_inputs if isinstance(t, torch.Tensor)}
        took.append(own <= ptrs)
        return compile_fx(graph, example_inputs)

    compiled = torch.compile(model, backend=backend)
    # x requires grad in one of the two calls in training mode and eval mode, a plain tensor
    # in the other: the parameters alone make a training graph
    x_grad = fresh.random() < 0.5
    x = _caller_input(torch.randn(fresh.randint(1, 9), width), x_grad, fresh)
    kept = _input_state(x)
    torch._dynamo.reset()
    out, codes = run_and_get_code(kata.inference_call, compiled, x)
    with check:
        _assert_input_kept(x, kept, "the call")
    with check:
        frozen = [n for n, p in model.named_parameters() if not p.requires_grad]
        assert not frozen, f"the call changed the caller's module: {frozen} no longer require grad"
    with check:
        assert model.training and compiled.training, "the call left the module in eval mode"
    with check:
        assert _modes(model) == modes, f"the call changed the layers' modes: {modes} before"
    with torch.no_grad():
        eager = model(x)
    assert len(handed) == 1, f"the caller's compiled module compiled {len(handed)} graphs, not 1"
    assert took == [True], "the graph compiled does not take the caller's module's parameters"
    assert len(codes) == 1, f"{len(codes)} graphs compiled: the compiled module must run one"
    names = oracle.inputs(codes[0])
    with check:
        assert not any(n.startswith(("primals_", "tangents_")) for n in names), "a training graph"
    with check:
        shapes = [tuple(x.shape)] + [tuple(p.shape) for p in model.parameters()]
        got = sorted(oracle.asserted_sizes(codes[0]).values())
        assert got == sorted(shapes), "the compiled graph's inputs are not x and the module's"
    with check:
        assert codes[0].count("\n        return (") == 1
        returned = codes[0].split("\n        return (", 1)[1].split(")\n", 1)[0]
        assert returned.count(",") == 1, f"the graph returns more than its output: ({returned})"
    with check:
        assert isinstance(out, torch.Tensor) and not out.requires_grad
    with check:
        _assert_eager_values(out, eager, "the call")
    with torch.no_grad():
        again = kata.inference_call(compiled, x)
        with check:
            assert not torch.is_grad_enabled(), "called under no_grad, it turned gradients on"
    with check:
        assert torch.is_grad_enabled(), "the call left gradients switched off"
    with check:
        _assert_eager_values(again, eager, "the call under torch.no_grad()")
    _inference_call_again_in_eval_mode(
        kata, model, compiled, _caller_input(x.detach(), not x_grad, fresh), eager, fresh
    )


def _nested_mlp(torch, width: int, hidden: int, rng):
    """An MLP whose first layer and activation sit one to three Sequentials (drawn) down."""
    inner = torch.nn.Sequential(torch.nn.Linear(width, hidden), torch.nn.GELU())
    for _ in range(rng.randint(0, 2)):
        inner = torch.nn.Sequential(inner)
    return torch.nn.Sequential(inner, torch.nn.Linear(hidden, 3))


def _deep_module(model, rng):
    """A submodule (drawn) two or more levels below `model`."""
    return rng.choice([m for name, m in model.named_modules() if "." in name])


def _modes(model) -> dict[str, bool]:
    """Every module's own train flag, by name ("" the module itself)."""
    return {name: m.training for name, m in model.named_modules()}


def _caller_input(values, requires_grad: bool, rng):
    """The caller's x holding `values`: a plain tensor, or one that requires grad: a leaf, or
    (drawn) a tensor computed from one, which has a grad_fn."""
    x = values.detach().clone()
    if not requires_grad:
        return x
    leaf = x.requires_grad_(True)
    return leaf if rng.random() < 0.5 else leaf * 1.0


def _input_state(x) -> tuple:
    return x.requires_grad, x.grad_fn, x.detach().clone()


def _assert_input_kept(x, kept: tuple, which: str) -> None:
    """The caller's x as it was before the call: its values, requires_grad and grad_fn."""
    __tracebackhide__ = True
    import torch  # pyright: ignore[reportMissingImports]  (the torch group)

    requires_grad, grad_fn, values = kept
    kind = "a plain tensor" if not requires_grad else "a leaf" if grad_fn is None else "computed"
    assert x.requires_grad == requires_grad, (
        f"{which} changed the caller's x ({kind}, shape {list(x.shape)}): requires_grad was "
        f"{requires_grad}, is {x.requires_grad} after it"
    )
    assert x.grad_fn is grad_fn, (
        f"{which} changed the caller's x ({kind}, shape {list(x.shape)}): its grad_fn was "
        f"{type(grad_fn).__name__}, is {type(x.grad_fn).__name__} after it"
    )
    assert torch.equal(x.detach(), values), f"{which} changed the values of the caller's x"


def _assert_eager_values(out, eager, which: str) -> None:
    """The module's eager float32 output, in its dtype and shape (an output computed in another
    dtype, autocast's bfloat16, is a wrong answer, not a comparison that cannot run)."""
    __tracebackhide__ = True
    import torch  # pyright: ignore[reportMissingImports]  (the torch group)

    assert isinstance(out, torch.Tensor), f"{which} returned {type(out).__name__}, not a tensor"
    assert out.dtype == eager.dtype and out.shape == eager.shape, (
        f"{which} returned {out.dtype}{list(out.shape)}, the module's eager output is "
        f"{eager.dtype}{list(eager.shape)}"
    )
    error = float((out.detach() - eager).abs().max())
    assert torch.allclose(out, eager, atol=1e-5), (
        f"{which} returned values off the module's eager output by up to {error:.2e}"
    )


def _inference_call_again_in_eval_mode(kata, model, compiled, x, eager, rng) -> None:
    """A later call, the caller's module now in eval mode (one module, drawn two or more levels
    down, in train mode) and gradients on: whatever Inductor compiles for it is an inference
    graph, and every module is in its own mode after it."""
    import torch  # pyright: ignore[reportMissingImports]  (the torch group)
    from torch._inductor.utils import run_and_get_code  # pyright: ignore[reportMissingImports]  (the torch group)

    model.eval()
    _deep_module(model, rng).train()
    modes = _modes(model)
    kept = _input_state(x)
    out, codes = run_and_get_code(kata.inference_call, compiled, x)
    with check:
        _assert_input_kept(x, kept, "the call in eval mode")
    with check:
        assert not model.training and not compiled.training, "the call left eval mode"
    with check:
        assert _modes(model) == modes, f"the call in eval mode changed the modes: {modes} before"
    with check:
        assert torch.is_grad_enabled(), "the call left gradients switched off"
    with check:
        names = [n for code in codes for n in oracle.inputs(code)]
        assert not any(n.startswith(("primals_", "tangents_")) for n in names), "a training graph"
    with check:
        assert isinstance(out, torch.Tensor) and not out.requires_grad, "a graph for autograd"
    with check:
        _assert_eager_values(out, eager, "the call in eval mode")
