"""Every task has a return contract, and arrays are held to their exact types: an ndarray
subclass whose ``__array_ufunc__`` takes the other operand's values passes ``np.allclose`` and
``==`` against anything (red-team probe phase 5 r3_agreeing_array)."""

from __future__ import annotations

import types

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from kata_harness import contract, curriculum, loading

KATA = types.ModuleType("_kata_arrays_under_test")
vars(KATA)["__kata_reference__"] = __name__


class Agreeing(np.ndarray):
    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        return np.ones(np.broadcast(*inputs).shape, bool)


Agreeing.__module__ = KATA.__name__


@pytest.mark.parametrize("hint", [jax.Array, np.ndarray, jax.Array | np.ndarray])
def test_an_ndarray_subclass_breaks_an_array_contract(hint):
    assert contract.mismatch(np.zeros(3).view(Agreeing), hint, KATA) is not None


def test_a_library_ndarray_subclass_breaks_an_ndarray_contract():
    assert contract.mismatch(np.ma.masked_all(3), np.ndarray, KATA) is not None


def test_real_arrays_keep_their_contracts():
    assert contract.mismatch(np.zeros(3), np.ndarray, KATA) is None
    assert contract.mismatch(jnp.zeros(3), jax.Array, KATA) is None
    seen = []
    jax.make_jaxpr(lambda x: seen.append(contract.mismatch(x, jax.Array, KATA)) or x)(1.0)
    assert seen == [None]  # a task a test traces returns a tracer


@pytest.mark.parametrize("phase", curriculum.phases(), ids=lambda p: p.name)
def test_every_task_has_a_return_contract(phase):
    """A task whose reference has no return annotation returns anything, an object equal to
    everything too: annotate it (arrays as jax.Array or np.ndarray)."""
    try:
        loading.import_needed(phase)
        name = f"_reference_{phase.name}"
        reference = loading.load_file(phase.reference_path, name, label=phase.name)
    except (ImportError, loading.KataLoadError) as error:
        if phase.needs is None or "No module named" not in str(error):
            raise
        pytest.skip(f"{phase.name} needs `{phase.install_command}`: {error}")
    functions = [task.function for task in phase.tasks]
    hints = contract.return_hints(reference, functions)
    missing = [f for f in functions if f not in hints]
    assert not missing, f"{phase.name}: no return annotation in the reference for {missing}"
