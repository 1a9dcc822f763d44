"""Routes to JAX's tracing that no public function on the refused list takes: the refusal stops
them where every trace goes through (the tracing core), while the answer runs and while the file
loads; inside an allowed eval_shape, a refused function is refused whatever JAX trampoline the
answer hands it to."""

from __future__ import annotations

from pathlib import Path

import pytest

from kata_harness import loading, predict
from kata_harness.curriculum import Task

TASK = Task(0, 1, "predict_traces", "t", (), kind="predict")
SHAPES = Task(
    0, 1, "predict_traces", "t", (), kind="predict", refuse=("jax.jacfwd",), allow=("eval_shape",)
)
_CONVERT = (
    "import jax\nimport numpy as np\n"
    "def _count():\n"
    "    seen = []\n"
    "    def g(v):\n"
    "        seen.append(1)\n"
    "        return v * 2\n"
    "    jax.closure_convert(g, np.ones(3, np.float32))\n"
    "    return len(seen)\n"
)


def _load(tmp_path: Path, name: str, source: str, task: Task = TASK, scan: bool = False):
    path = tmp_path / f"{name}.py"
    path.write_text(source)
    module = loading.load_file(path, f"_routes_{name}", label="phase0", scan=scan)
    predict.refuse_in(module, [task], loading._compiled_at_load[module.__name__])
    return module


def test_closure_convert_in_a_prediction_is_refused(tmp_path):
    module = _load(tmp_path, "convert", _CONVERT + "def predict_traces():\n    return _count()\n")
    with pytest.raises(pytest.fail.Exception, match=r"phase0\.task1 .*(closure_convert|tracing)"):
        module.predict_traces()


def test_a_trace_of_the_core_under_any_public_name_is_refused(tmp_path):
    """Whatever public function (or none) asks for the trace: the core is where it is seen."""
    source = (
        "import jax\nfrom jax import lax\n"
        "def predict_traces():\n"
        "    seen = []\n"
        "    jax.linearize(lambda v: seen.append(1) or v * 2, 1.0)\n"
        "    return len(seen)\n"
    )
    module = _load(tmp_path, "linearize", source)
    with pytest.raises(pytest.fail.Exception, match=r"phase0\.task1 "):
        module.predict_traces()


def test_a_table_traced_with_closure_convert_while_the_file_loads_is_refused(tmp_path):
    source = _CONVERT + "_TABLE = _count()\ndef predict_traces():\n    return _TABLE\n"
    module = _load(tmp_path, "convert_at_load", source, scan=True)
    assert any("tracing" in entry for entry in loading._compiled_at_load[module.__name__])
    with pytest.raises(pytest.fail.Exception, match="while it loaded"):
        module.predict_traces()


def test_closure_convert_is_refused_outside_an_allowed_eval_shape(tmp_path):
    module = _load(
        tmp_path,
        "convert_shapes",
        _CONVERT + "def predict_traces():\n    return _count()\n",
        SHAPES,
    )
    with pytest.raises(pytest.fail.Exception, match=r"phase0\.task1 "):
        module.predict_traces()


_TRAMPOLINED = (
    "import jax\nimport jax.numpy as jnp\nimport numpy as np\n"
    "_TRACER, _JAC = jax.make_jaxpr, jax.jacfwd\n"
    "def predict_traces(f, x):\n"
    "    found = []\n"
    "    def measure(v):\n"
    "        [jac] = jax.tree.map(_JAC, [f])\n"
    "        found.append(jax.tree.map(_TRACER, [jac])[0](v))\n"
    "        return v\n"
    "    jax.eval_shape(measure, x)\n"
    "    return len(found)\n"
)


@pytest.mark.parametrize("how", ["tree_map", "vectorize"])
def test_a_refused_function_handed_to_a_trampoline_inside_eval_shape_is_refused(tmp_path, how):
    """jax.tree.map (a JAX frame) or numpy.vectorize (another library's) calling make_jaxpr and
    jacfwd inside the allowed eval_shape: kata code asked for them all the same."""
    source = _TRAMPOLINED
    if how == "vectorize":
        source = source.replace(
            "jax.tree.map(_JAC, [f])", "np.vectorize(_JAC, otypes=[object])([f])"
        )
    module = _load(tmp_path, f"trampoline_{how}", source, SHAPES)
    import jax.numpy as jnp

    with pytest.raises(pytest.fail.Exception, match=r"phase0\.task1 .*(make_jaxpr|jacfwd)"):
        module.predict_traces(jnp.sin, jnp.ones(3))


def test_eval_shape_of_the_tests_program_passes_with_what_jax_traces_inside(tmp_path):
    """The test's own program (not kata code) calling jnp.einsum, which jits its body on every
    call under eval_shape: JAX's own work, not refused."""
    program = tmp_path / "program_einsum.py"
    program.write_text(
        "import jax.numpy as jnp\ndef f(x):\n    return jnp.einsum('i,j->ij', jnp.sin(x), x)\n"
    )
    programs = loading.load_file(program, "_routes_program_einsum", label="phase0")
    source = (
        "import jax\nimport numpy as np\n"
        "def predict_traces(f, x):\n"
        "    out = jax.eval_shape(f, x)\n"
        "    return 'jacfwd' if np.size(x) < np.prod(out.shape) else 'jacrev'\n"
    )
    module = _load(tmp_path, "honest_shapes", source, SHAPES)
    import jax.numpy as jnp

    assert module.predict_traces(programs.f, jnp.ones(3)) == "jacfwd"
    assert module.predict_traces(lambda v: jnp.sum(v), jnp.ones(3)) == "jacrev"


def test_a_serialized_export_deserialized_in_any_prediction_is_refused(tmp_path):
    """An Exported kept as bytes in the file is what JAX lowered when it was made: refused for
    every predict task, not only where a phase lists it."""
    import jax
    import jax.export
    import jax.numpy as jnp

    blob = bytes(jax.export.export(jax.jit(jnp.sin))(jnp.ones(3)).serialize())
    source = (
        "from jax import export as _e\n"
        f"_BLOB = {blob!r}\n"
        "def predict_traces():\n"
        "    text = _e.deserialize(bytearray(_BLOB)).mlir_module()\n"
        "    return int('sine' in text)\n"
    )
    module = _load(tmp_path, "deserialized", source)
    with pytest.raises(pytest.fail.Exception, match=r"phase0\.task1 .*deserialize"):
        module.predict_traces()
