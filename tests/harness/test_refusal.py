"""The refusal the harness puts around every predict task function holds however the answer
reaches the compiler: a ``jit`` or stage method saved at import, the refusal caught with
``except BaseException``, JAX's listeners removed, or the work done while the file loads. A plain
Python prediction passes, and nothing stays patched afterwards."""

from __future__ import annotations

import inspect
import sys
import textwrap
from pathlib import Path

import jax
import pytest

from kata_harness import call_watch, loading, predict
from kata_harness.curriculum import Task

TASK = Task(phase=0, number=1, function="predict_flops", title="t", hints=(), kind="predict")

HEADER = textwrap.dedent("""
    import jax
    import jax.numpy as jnp
    from jax import jit
    _lower = jax.stages.Traced.lower
    _saved_jit = jax.jit
""")

ANSWERS = {
    "plain": "def predict_flops(n):\n    return 2 * n * n\n",
    "saved_jit": "def predict_flops(n):\n    jit(jnp.sin).trace(1.0)\n    return 2 * n * n\n",
    "saved_stage": (
        "def predict_flops(n):\n"
        "    c = _lower(_saved_jit(jnp.sin).trace(jnp.ones(n))).compile()\n"
        "    return 2 * n * n\n"
    ),
    "caught": (
        "def predict_flops(n):\n"
        "    try:\n"
        "        jax.jit(jnp.sin).lower(1.0)\n"
        "    except BaseException:\n"
        "        pass\n"
        "    return 2 * n * n\n"
    ),
    "eager": "def predict_flops(n):\n    return int(jnp.sum(jnp.ones((n, n)))) * 2\n",
    "listeners_cleared": (
        "def predict_flops(n):\n    jax.monitoring.clear_event_listeners()\n    return 2 * n * n\n"
    ),
    "in_a_thread": (
        "import threading\n"
        "def _trace():\n"
        "    try:\n"
        "        _saved_jit(jnp.sin).trace(1.0)\n"
        "    except BaseException:\n"
        "        pass\n"
        "def predict_flops(n):\n"
        "    worker = threading.Thread(target=_trace)\n"
        "    worker.start()\n"
        "    worker.join()\n"
        "    return 2 * n * n\n"
    ),
    "at_import": "_TABLE = {n: int(jnp.sum(jnp.ones((n, n)))) * 2 for n in (3, 4)}\n"
    "def predict_flops(n):\n    return _TABLE[n]\n",
}


def _load(tmp_path: Path, name: str):
    path = tmp_path / f"{name}.py"
    path.write_text(HEADER + ANSWERS[name])
    module = loading.load_file(path, f"_refusal_{name}", label="phase0")
    predict.refuse_in(module, [TASK], loading._compiled_at_load[module.__name__])
    return module


def test_a_plain_python_prediction_passes(tmp_path):
    assert _load(tmp_path, "plain").predict_flops(4) == 32
    assert jax.jit.__module__.startswith("jax") and "refuse" not in jax.jit.__name__


@pytest.mark.parametrize("name", [n for n in ANSWERS if n != "plain"])
def test_every_way_to_the_compiler_fails_the_test(tmp_path, name):
    module = _load(tmp_path, name)
    with pytest.raises(pytest.fail.Exception) as failed:
        module.predict_flops(4)
    assert str(failed.value).startswith("phase0.task1 (predict_flops)")
    assert "jit" not in vars(jax.stages.Traced).get("lower", jax.stages.Traced.lower).__name__


def test_the_refusal_leaves_jax_as_it_found_it(tmp_path):
    before = (jax.jit, jax.stages.Traced.lower, jax.stages.Lowered.compile)
    with pytest.raises(pytest.fail.Exception):
        _load(tmp_path, "caught").predict_flops(3)
    assert (jax.jit, jax.stages.Traced.lower, jax.stages.Lowered.compile) == before
    assert jax.jit(lambda x: x + 1)(1) == 2
    # and no watch is left on JAX's code (call_watch): nothing the process runs later pays for it
    tool = call_watch._tool_id()  # noqa: SLF001
    assert sys.monitoring.get_events(tool) == 0
    for function in (jax.jit, jax.stages.Traced.lower, jax.stages.Lowered.compile):
        code = inspect.unwrap(function).__code__
        assert sys.monitoring.get_local_events(tool, code) == 0


def test_a_refused_function_saved_under_another_name_is_still_refused(tmp_path):
    """``jnp.result_type`` neither traces nor compiles; bound at import it is still refused."""
    path = tmp_path / "saved.py"
    path.write_text(
        "from jax.numpy import result_type as rt\n"
        "def predict_flops(n):\n    return 2 * n * n if rt('float32') else 0\n"
    )
    task = Task(0, 1, "predict_flops", "t", (), kind="predict", refuse=("jax.numpy.result_type",))
    module = loading.load_file(path, "_refusal_saved_rt", label="phase0")
    predict.refuse_in(module, [task], [])
    with pytest.raises(pytest.fail.Exception, match="called jax.numpy.result_type"):
        module.predict_flops(2)


def test_compiling_text_with_the_backend_client_is_refused(tmp_path):
    """Text that was never traced, compiled by jaxlib's client, is a compile all the same."""
    mlir = tmp_path / "add.mlir"
    mlir.write_text(jax.jit(lambda x: x + 1).lower(1.0).as_text())
    path = tmp_path / "client.py"
    path.write_text(
        "from xla_inspect.capture import capture_ir\n"
        "def predict_flops(n):\n"
        f"    capture_ir({str(mlir)!r})\n"
        "    return 2 * n * n\n"
    )
    module = loading.load_file(path, "_refusal_client", label="phase0")
    predict.refuse_in(module, [TASK], [])  # what it lowered while loading is not the point here
    with pytest.raises(pytest.fail.Exception, match="phase0.task1"):
        module.predict_flops(2)


def test_a_file_that_changes_a_library_while_it_loads_is_refused(tmp_path):
    """However it reached the class (a lambda the scan cannot follow), the change is seen."""
    path = tmp_path / "patcher.py"
    path.write_text(
        "import jax\n"
        "_owner = (lambda: jax.stages.Compiled)()\n"
        "_owner.memory_analysis = lambda self: None\n"
    )
    original = jax.stages.Compiled.memory_analysis
    try:
        with pytest.raises(loading.KataRefused, match="changes .*Compiled.memory_analysis"):
            loading.load_file(path, "_refusal_patcher", label="phase0")
    finally:
        jax.stages.Compiled.memory_analysis = original  # type: ignore[method-assign]


def test_a_file_that_changes_a_jax_setting_while_it_loads_is_refused(tmp_path):
    """A setting is what the tests measure with too: dumping every program the tests compile
    (``jax_dump_ir_to``) would let an answer read them back."""
    path = tmp_path / "dumper.py"
    path.write_text(
        f"import jax\njax.config.update('jax_dump_ir_to', {str(tmp_path / 'dump')!r})\n"
    )
    original = jax.config.values["jax_dump_ir_to"]
    try:
        with pytest.raises(loading.KataRefused, match="changes jax.config setting jax_dump_ir_to"):
            loading.load_file(path, "_refusal_dumper", label="phase0")
    finally:
        jax.config.update("jax_dump_ir_to", original)


def test_a_client_compile_bound_before_the_refusal_is_still_seen(tmp_path):
    """A compile method bound at import skips any patch made later; the count sees it."""
    mlir = tmp_path / "add.mlir"
    mlir.write_text(jax.jit(lambda x: x + 1).lower(1.0).as_text())
    path = tmp_path / "bound.py"
    path.write_text(
        "import jax.extend.backend as jeb\n"
        "from jaxlib.xla_client import DeviceList\n"
        "_backend = jeb.get_backend()\n"
        "_compile = _backend.compile_and_load\n"
        f"_TEXT = open({str(mlir)!r}).read()\n"
        "def predict_flops(n):\n"
        "    devices = DeviceList(tuple(_backend.local_devices()[:1]))\n"
        "    _compile(_TEXT, devices, jeb.get_compile_options(num_replicas=1, num_partitions=1))\n"
        "    return 2 * n * n\n"
    )
    module = loading.load_file(path, "_refusal_bound_client", label="phase0")
    predict.refuse_in(module, [TASK], loading._compiled_at_load[module.__name__])
    with pytest.raises(pytest.fail.Exception, match=r"phase0\.task1 .*compil"):
        module.predict_flops(2)


@pytest.mark.parametrize(
    "source",
    [
        "import sys\ndef f():\n    sys.setprofile(None)\n",
        "import sys\nsaved = sys.getprofile\n",
        "import inspect\n",
        "from sys import settrace\n",
        # the refusal's watch is a sys.monitoring tool (kata_harness/call_watch.py)
        "import sys\ndef f():\n    sys.monitoring.set_events(3, 0)\n",
        "import sys\nm = sys.monitoring\ndef f():\n    m.register_callback(3, 1, None)\n",
        "import sys\ndef f():\n    sys.monitoring.free_tool_id(3)\n",
        "import sys\ndef f():\n    sys.monitoring.clear_tool_id(3)\n",
    ],
)
def test_the_scan_refuses_switching_the_refusal_off(source):
    from kata_harness import source_scan

    assert source_scan.scan(source, "kata.py") is not None


def test_a_marker_copied_onto_the_answer_does_not_switch_the_refusal_off(tmp_path):
    path = tmp_path / "marked.py"
    path.write_text(
        HEADER + "def predict_flops(n):\n    jit(jnp.sin).trace(1.0)\n    return 2 * n * n\n"
        "predict_flops.__kata_refused__ = True\npredict_flops.__kata_contract__ = True\n"
    )
    module = loading.load_file(path, "_refusal_marked", label="phase0")
    predict.refuse_in(module, [TASK], [])
    with pytest.raises(pytest.fail.Exception, match="phase0.task1"):
        module.predict_flops(2)


def test_a_refused_function_passed_through_jax_or_under_an_outer_refusal_is_refused(tmp_path):
    """jax.tree.map calling a saved function is still the answer calling it, and a test's own
    compiler_refused around the call does not hide the real function behind its stand-in."""
    path = tmp_path / "laundered.py"
    path.write_text(
        "import jax\nfrom jax.numpy import result_type as _rt\n"
        "def predict_flops(n):\n"
        "    jax.tree.map(lambda x: _rt(x), ['float32'])\n"
        "    return 2 * n * n\n"
    )
    task = Task(0, 1, "predict_flops", "t", (), kind="predict", refuse=("jax.numpy.result_type",))
    module = loading.load_file(path, "_refusal_laundered", label="phase0")
    predict.refuse_in(module, [task], [])
    import jax.numpy as jnp

    with pytest.raises(pytest.fail.Exception, match="result_type"):
        module.predict_flops(2)
    with pytest.raises(pytest.fail.Exception, match="result_type"):
        with predict.compiler_refused("phase0 outer", also=[(jnp, "result_type")]):
            module.predict_flops(2)


def test_a_table_built_with_a_refused_function_while_the_file_loads_is_refused(tmp_path):
    """jnp.result_type (refused by a phase-2 task) neither traces nor compiles: the load watch
    names it all the same, and every predict task of the file then fails."""
    path = tmp_path / "table.py"
    path.write_text(
        "import jax.numpy as jnp\n"
        "_TABLE = {n: str(jnp.result_type('float32', 'int8')) for n in (1, 2)}\n"
        "def predict_flops(n):\n    return 2 * n * n if _TABLE else 0\n"
    )
    module = loading.load_file(path, "_refusal_table", label="phase0", scan=True)
    at_load = loading._compiled_at_load[module.__name__]
    assert any("jax.numpy.result_type" in entry for entry in at_load), at_load
    predict.refuse_in(module, [TASK], at_load)
    with pytest.raises(pytest.fail.Exception, match="while it loaded"):
        module.predict_flops(2)


def test_what_the_answer_returned_cannot_be_filled_in_later(tmp_path):
    """A listener the file registered that fills the returned dict when the test traces its own
    program: the test compares a copy taken when the answer returned."""
    path = tmp_path / "later.py"
    path.write_text(
        "import jax\n"
        "_answer = {'k': 0}\n"
        "def _fill(event, duration, **_):\n"
        "    if event.endswith('backend_compile_duration'):\n"
        "        _answer['k'] = 32\n"
        "jax.monitoring.register_event_duration_secs_listener(_fill)\n"
        "def predict_flops(n):\n    return _answer\n"
    )
    task = Task(0, 1, "predict_flops", "t", (), kind="predict")
    module = loading.load_file(path, "_refusal_later", label="phase0")
    predict.refuse_in(module, [task], [])
    got = module.predict_flops(4)
    jax.jit(lambda x: x * 3 + 1)(1.0)  # the test's own compile fires the listener
    assert got == {"k": 0}


def test_the_answer_may_not_call_refused_functions_inside_what_eval_shape_traces(tmp_path):
    path = tmp_path / "tunnel.py"
    path.write_text(
        "import jax\nimport jax.numpy as jnp\nfrom jax import make_jaxpr as _mj\n"
        "def predict_flops(n):\n"
        "    def inner(x):\n"
        "        _mj(jnp.sin)(1.0)\n"
        "        return x\n"
        "    jax.eval_shape(inner, jax.ShapeDtypeStruct((n,), jnp.float32))\n"
        "    return 2 * n * n\n"
    )
    task = Task(0, 1, "predict_flops", "t", (), kind="predict", allow=("eval_shape",))
    module = loading.load_file(path, "_refusal_tunnel", label="phase0")
    predict.refuse_in(module, [task], [])
    with pytest.raises(pytest.fail.Exception, match="make_jaxpr"):
        module.predict_flops(2)


_LOWERS = textwrap.dedent("""
    import jax
    from jax.interpreters import mlir as _m
    _lower = _m.lower_jaxpr_to_module
    def _text(jaxpr):
        given = dict(
            num_const_args=0, in_avals=jaxpr.in_avals, ordered_effects=[], platforms=["cpu"],
            backend=None, axis_context=_m.ShardingContext(1),
            donated_args=[False] * len(jaxpr.in_avals),
            lowering_parameters=_m.LoweringParameters(),
        )
        try:
            return str(_lower("m", jaxpr, out_avals=jaxpr.out_avals, **given).module)
        except TypeError:  # jax 0.10 takes no out_avals
            return str(_lower("m", jaxpr, **given).module)
""")


def test_a_jaxpr_lowered_through_jaxs_internals_is_refused(tmp_path):
    """``jax.interpreters.mlir.lower_jaxpr_to_module`` on a closed jaxpr records no trace, lower
    or compile event; saved at import and caught with ``except BaseException`` it is still seen,
    as is every lowering (each builds a ModuleContext)."""
    path = tmp_path / "lowers.py"
    path.write_text(
        _LOWERS + "def predict_verdict(jaxpr):\n"
        "    try:\n"
        "        return 'sine' if 'sine' in _text(jaxpr) else 'other'\n"
        "    except BaseException:\n"
        "        return 'sine'\n"
    )
    task = Task(0, 1, "predict_verdict", "t", (), kind="predict")
    module = loading.load_file(path, "_refusal_lowers", label="phase0")
    predict.refuse_in(module, [task], [])
    jaxpr = jax.make_jaxpr(jax.numpy.sin)(1.0)
    assert "sine" in module.__dict__["_text"](jaxpr)  # the path lowers outside a prediction
    with pytest.raises(pytest.fail.Exception, match=r"phase0\.task1 .*JAX's lowering"):
        module.predict_verdict(jaxpr)
    from jax._src.interpreters import mlir

    assert "refuse" not in mlir.ModuleContext.__init__.__name__


def test_a_table_lowered_while_the_file_loads_is_refused(tmp_path):
    path = tmp_path / "lowered_table.py"
    path.write_text(
        _LOWERS + "_TABLE = _text(jax.make_jaxpr(jax.numpy.sin)(1.0))\n"
        "def predict_verdict(jaxpr):\n    return 'sine' if 'sine' in _TABLE else 'other'\n"
    )
    module = loading.load_file(path, "_refusal_lowered_table", label="phase0", scan=True)
    at_load = loading._compiled_at_load[module.__name__]
    assert any("JAX's lowering" in entry for entry in at_load), at_load


def test_a_prediction_that_runs_the_program_on_arrays_of_the_shapes_is_refused(tmp_path):
    """numpy.vectorize is a vmap no JAX refusal sees; on shapes past what a host holds (the
    tests draw some), an answer that makes stand-in arrays of them runs out of memory, and that
    fails the test as a refusal, not as a crash of the answer."""
    path = tmp_path / "host_run.py"
    path.write_text(
        "import numpy as np\n"
        "def predict_flops(n):\n"
        "    a = np.zeros((n, n), np.float32)\n"
        "    return int(np.vectorize(lambda x: 2.0)(a[:1, :1]).sum()) * n * n\n"
    )
    module = loading.load_file(path, "_refusal_host_run", label="phase0")
    predict.refuse_in(module, [TASK], [])
    assert module.predict_flops(4) == 32  # small shapes: nothing to see
    with pytest.raises(pytest.fail.Exception, match=r"phase0.task1 .* ran out of memory"):
        module.predict_flops(2**25)  # 2**52 bytes: past any address space
