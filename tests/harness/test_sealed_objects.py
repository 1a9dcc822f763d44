"""Predictions are sealed off from the process's live objects (kata_harness.sealed): red team
round 7 (phase 6) scanned the garbage collector for the executables the tests compiled and read
a Compiled out of the caller's frames. The scan refuses ``import gc`` and ``import inspect``;
these answers reach both under modules that re-export them (``timeit.gc``,
``dataclasses.inspect``), and each fails the test through the refusal, whatever the test
compiled before; what a library reads for itself (a logged warning naming its caller, an enum,
a named tuple, JAX tracing for ``eval_shape``) passes."""

from __future__ import annotations

import os
import sys
import textwrap

import pytest

from kata_harness import guard, loading, predict
from kata_harness.curriculum import Task

TASK = Task(phase=0, number=1, function="predict_flops", title="t", hints=(), kind="predict")
INSTALLED = guard.installed_dirs()
ALLOWED = Task(
    phase=0,
    number=1,
    function="predict_flops",
    title="t",
    hints=(),
    kind="predict",
    allow=("eval_shape",),
)


def _kata_module(
    tmp_path, monkeypatch, name: str, source: str, task: Task = TASK, *, scan: bool = True
):
    """``source`` loaded as a learner's file (the hooks treat it as kata code), its prediction
    refused as the harness refuses it."""
    path = (tmp_path / f"{name}.py").resolve()
    path.write_text(textwrap.dedent(source))
    monkeypatch.setattr(guard, "is_kata_file", lambda filename: filename == str(path))
    module = loading.load_file(path, f"_sealed_objects_{name}", label="phase0", scan=scan)
    predict.refuse_in(module, [task], loading._compiled_at_load[module.__name__])
    return module


REACHES = {
    "gc through timeit": """
        import timeit
        def predict_flops(n):
            return len(timeit.gc.get_objects())
        """,
    "gc referrers, the refusal caught": """
        import timeit
        def predict_flops(n):
            try:
                return len(timeit.gc.get_referrers(n))
            except Exception:
                return 0
        """,
    "the callers' frames through dataclasses.inspect": """
        import dataclasses
        def predict_flops(n):
            found = 0
            for info in dataclasses.inspect.stack(0)[1:]:
                found += len(dataclasses.inspect.getargvalues(info[0]).locals)
            return found
        """,
    "a traceback's frames": """
        import dataclasses
        def predict_flops(n):
            try:
                raise ValueError(n)
            except ValueError as error:
                return len(dataclasses.inspect.getinnerframes(error.__traceback__, 0))
        """,
}


@pytest.mark.parametrize("source", REACHES.values(), ids=REACHES.keys())
def test_a_prediction_that_reaches_live_objects_fails(tmp_path, monkeypatch, source):
    module = _kata_module(tmp_path, monkeypatch, "reach", source)
    with pytest.raises(pytest.fail.Exception, match=r"predict_flops\) reached live objects \("):
        module.predict_flops(8)


def test_what_libraries_read_for_themselves_passes(tmp_path, monkeypatch):
    module = _kata_module(
        tmp_path,
        monkeypatch,
        "libraries",
        """
        import collections
        import enum
        import logging
        import jax
        import jax.numpy as jnp

        def predict_flops(n):
            logging.getLogger("kata").warning("predicting %d", n)
            Pair = collections.namedtuple("Pair", "a b")
            Kind = enum.Enum("Kind", "dot add")
            shape = jax.eval_shape(jnp.sin, jax.ShapeDtypeStruct((n,), jnp.float32)).shape
            return Pair(shape[0], len(Kind)).a * 2
        """,
        ALLOWED,
    )
    assert module.predict_flops(8) == 16


def test_a_library_loaded_by_kata_code_reads_its_importer_for_itself(tmp_path, monkeypatch):
    """absl's flags read their importer's globals through ``sys._getframe`` as optax first
    loads: phase 10's stub imports optax, and loaded sealed in a fresh process it was refused.
    An installed module's own code run by an import passes; the same library's function called
    by the prediction, reaching the same frames, is refused."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "_sealed_installed_lib.py").write_text(
        "import sys\n"
        "IMPORTER = sys._getframe(1).f_globals.get('__name__')\n"
        "def caller_globals():\n"
        "    return len(sys._getframe(1).f_globals)\n"
    )
    monkeypatch.syspath_prepend(str(site))
    installed = (*INSTALLED, os.path.join(os.path.realpath(site), ""))
    monkeypatch.setattr(guard, "installed_dirs", lambda: installed)
    monkeypatch.delitem(sys.modules, "_sealed_installed_lib", raising=False)
    module = _kata_module(
        tmp_path,
        monkeypatch,
        "imports",
        """
        import _sealed_installed_lib

        def predict_flops(n):
            return _sealed_installed_lib.caller_globals()
        """,
        scan=False,  # the scan refuses importing modules it cannot place; the hook is judged
    )
    with pytest.raises(pytest.fail.Exception, match=r"reached live objects \(sys._getframe\)"):
        module.predict_flops(8)
