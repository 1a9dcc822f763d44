"""Red-team rounds 4/5 answers the harness rejects for a reason that holds, not by luck: a
refused method reached through the base class that defines it (phase 9's
``NamedSharding.shard_shape`` called as ``Sharding.shard_shape``: the refusal knows the function
by its code), and results that compile only when the test reads them, after the refusal ended
(an ``int``, ``dict`` or ``list`` subclass whose ``__deepcopy__`` returns itself, so the
harness's frozen copy stays lazy; phases 4, 9, 13): the return-type contract takes no subclass of
a builtin result."""

from __future__ import annotations

import types

import pytest

from kata_harness import contract, loading, predict
from kata_harness.curriculum import Task


def test_a_refused_method_called_through_its_base_class_is_refused(tmp_path):
    path = tmp_path / "base_class.py"
    path.write_text(
        "import jax\n"
        "def predict_shard_shape(n):\n"
        "    mesh = jax.make_mesh((1,), ('x',))\n"
        "    s = jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec('x'))\n"
        "    return jax.sharding.Sharding.shard_shape(s, (n,))\n"
    )
    refused = ("jax.sharding.NamedSharding.shard_shape",)
    task = Task(0, 1, "predict_shard_shape", "t", (), kind="predict", refuse=refused)
    module = loading.load_file(path, "_refusal_base_class", label="phase0")
    predict.refuse_in(module, [task], [])
    with pytest.raises(pytest.fail.Exception, match="called NamedSharding.shard_shape"):
        module.predict_shard_shape(4)


class _LaterInt(int):
    def __deepcopy__(self, memo):
        return self


class _LaterDict(dict):
    def __deepcopy__(self, memo):
        return self


class _LaterList(list):
    def __deepcopy__(self, memo):
        return self


@pytest.mark.parametrize(
    ("value", "hint"),
    [(_LaterInt(3), int), (_LaterDict(a=1), dict[str, int]), (_LaterList([(1,)]), list)],
    ids=["int", "dict", "list"],
)
def test_a_result_that_stays_lazy_past_the_refusal_is_refused(tmp_path, value, hint):
    path = tmp_path / f"lazy_{type(value).__name__}.py"
    path.write_text("def predict_flops(n):\n    return LATER\n")
    module = loading.load_file(path, f"_refusal_lazy_{type(value).__name__}", label="phase0")
    module.LATER = value  # type: ignore[attr-defined]
    task = Task(0, 1, "predict_flops", "t", (), kind="predict")
    contract.wrap(
        module,
        {"predict_flops": "phase0.task1 (predict_flops)"},
        {"predict_flops": hint},
        types.__name__,
    )
    predict.refuse_in(module, [task], [])
    with pytest.raises(contract.ContractViolation, match="returned the wrong type"):
        module.predict_flops(2)


_MODULE_HOOKS = {
    "def": "def __getattr__(name):\n    return lambda calls: len(calls)\n",
    "dir": "def __dir__():\n    return ['count_traces']\n",
    "assigned": "def _build(name):\n    return len\n__getattr__ = _build\n",
    "globals key": "def _build(name):\n    return len\nglobals()['__getattr__'] = _build\n",
    "declared global": "def setup():\n    global __getattr__\n    __getattr__ = len\n",
    "imported": "from operator import itemgetter as __getattr__\n",
}


@pytest.mark.parametrize("source", _MODULE_HOOKS.values(), ids=_MODULE_HOOKS.keys())
def test_a_module_level_getattr_is_refused_as_the_file_loads(tmp_path, source):
    """A kata file's PEP 562 ``__getattr__`` (or ``__dir__``) builds a task function when a test
    first looks its name up: after the load and outside every refusal, so whatever it measures
    then (jax.typeof of samples, a compile) goes unseen. The file is refused as it loads, in
    every way it can bind one at module level (red-team round 16's phase 1 probe)."""
    path = tmp_path / "kata.py"
    path.write_text("import jax\n" + source)
    with pytest.raises(loading.KataRefused, match="__getattr__|__dir__"):
        loading.load_file(path, "_refusal_module_hook", label="phase0", scan=True)


def test_a_class_may_define_its_own_getattr(tmp_path):
    """A class's ``__getattr__`` method is no module hook: the file loads."""
    path = tmp_path / "kata.py"
    path.write_text("class Box:\n    def __getattr__(self, name):\n        return 0\n")
    module = loading.load_file(path, "_refusal_class_getattr", label="phase0", scan=True)
    assert module.Box().anything == 0
