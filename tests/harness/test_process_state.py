"""Process-wide state as a channel from a read task to the copy of the file that answers
predictions (red-team round 4: a memo kept on ``logging.getLogger(...)``, a printoptions
formatter, an audit hook), another measuring library answering a prediction (torch's
FlopCounterMode), and a kata file writing to its own source or to compiled bytecode. The scan
refuses the setters and registries kata code never needs and a phase's foreign libraries; a task
call that leaves a logger or a global random generator changed is refused; kata code writes
nowhere in the course's checkout. Honest code (phase 7's handler added and removed again, an
import whose bytecode is not cached yet) is left alone."""

from __future__ import annotations

import logging
import types

import numpy as np
import pytest

from kata_harness import curriculum, guard, loading, source_scan
from kata_harness.contract import ContractViolation, wrap


@pytest.mark.parametrize(
    "source",
    [
        "import sys\nsys.addaudithook(lambda event, args: None)\n",
        "import numpy as np\ndef f(t):\n    np.set_printoptions(formatter={'int': t.get})\n",
        "import numpy as np\ndef f(t):\n    with np.printoptions(formatter={'int': t.get}):\n"
        "        pass\n",
        "import sys\ndef f(t):\n    sys.setrecursionlimit(1000 + t)\n",
        "import numpy as np\ndef f(t):\n    np.random.seed(t)\n",
        "import warnings\ndef f(t):\n    warnings.filterwarnings('ignore', message=str(t))\n",
        "import atexit\natexit.register(print)\n",
        "import codecs\n",
        "import random\ndef f(t):\n    random.random()\n",
        "import jax\ndef f(t):\n    next(iter((jax,))).memo = t\n",
        "import math\nSHELF = next(iter((math,)))\ndef f(t):\n    SHELF.memo = t\n",
        "import jax\ndef f(t):\n    {'m': jax}['m'].memo = t\n",
        "import jax\ndef pick(a, b):\n    return b\ndef f(t):\n    pick(None, jax).memo = t\n",
        "import jax\nimport functools\n"
        "def f(t):\n    functools.reduce(lambda a, b: b, [jax]).memo = t\n",
        "import logging\ndef f(t):\n    logging.getLogger('notes').memo = t\n",
        "import logging\nCHANNEL = logging.getLogger('notes')\n"
        "def f(t):\n    CHANNEL.filters.append(t)\n",
        "import logging\ndef f(t):\n    for h in logging.getLogger().handlers:\n"
        "        h.memo = t\n",
    ],
)
def test_the_scan_refuses_process_wide_state_a_library_keeps(source):
    assert source_scan.scan(source, "kata.py") is not None


@pytest.mark.parametrize(
    "source",
    [
        # phase 7's spelling: a handler on JAX's logger, removed again
        "import logging\ndef f(h):\n    logger = logging.getLogger('jax')\n"
        "    logger.addHandler(h)\n    logger.removeHandler(h)\n",
        "import collections\ndef f(xs):\n    c = collections.Counter()\n    c['a'] += 1\n",
        "def f(xs):\n    out = list(map(float, xs))\n    out.append(1.0)\n",
        "import jax\nimport jax.numpy as jnp\n"
        "def f(p):\n    z = jax.tree.map(jnp.zeros_like, p)\n    z['w'] = 1\n",
        "import numpy as np\ndef f():\n    rng = np.random.default_rng(0)\n"
        "    return rng.integers(3)\n",
    ],
)
def test_the_scan_leaves_honest_code_alone(source):
    assert source_scan.scan(source, "kata.py") is None


def _phase(number: int) -> curriculum.Phase:
    return next(p for p in curriculum.phases() if p.number == number)


def test_a_phase_imports_only_the_libraries_its_lesson_uses():
    counter = "from torch.utils.flop_counter import FlopCounterMode\n"
    found = source_scan.scan(counter, "kata.py", loading.allowed_libraries(_phase(10)))
    assert found is not None and "imports torch" in found
    assert source_scan.scan(counter, "kata.py", loading.allowed_libraries(_phase(16))) is None
    found = source_scan.scan("import scipy\n", "kata.py", loading.allowed_libraries(_phase(16)))
    assert found is not None and "imports scipy" in found
    honest = "import json\nimport math\nimport jax\nimport optax\nfrom xla_inspect import x\n"
    assert source_scan.scan(honest, "kata.py", loading.allowed_libraries(_phase(10))) is None


def _task(module_name: str, function) -> types.ModuleType:
    module = types.ModuleType(module_name)
    module.read = function  # type: ignore[attr-defined]
    wrap(module, {"read": "phase0.task1 (read)"}, {"read": int}, __name__)
    return module


def test_a_read_task_that_leaves_a_memo_on_a_logger_is_refused():
    def keeps(flops: int) -> int:
        logging.getLogger("kata_harness_tests.notes").addFilter({"flops": flops})  # type: ignore[arg-type]
        return flops

    logger = logging.getLogger("kata_harness_tests.notes")
    try:
        with pytest.raises(ContractViolation, match="changed the logger 'kata_harness_tests"):
            _task("_kata_logger_memo", keeps).read(128)  # type: ignore[attr-defined]
    finally:
        logger.filters.clear()


def test_a_handler_added_and_removed_again_is_not_a_change():
    def collects(flops: int) -> int:
        handler = logging.Handler()
        logging.getLogger("jax").addHandler(handler)
        logging.getLogger("jax").removeHandler(handler)
        return flops

    assert _task("_kata_logger_honest", collects).read(3) == 3  # type: ignore[attr-defined]


def test_a_read_task_that_moves_numpys_global_random_generator_is_refused():
    def draws(flops: int) -> int:
        np.random.random(flops)
        return flops

    with pytest.raises(ContractViolation, match="global random generator"):
        _task("_kata_draws", draws).read(5)  # type: ignore[attr-defined]


@pytest.mark.parametrize("target", ["katas/phase1/kata.py", "pytest.ini", "tools/memo.py"])
def test_kata_code_may_not_write_to_the_course_its_own_file_included(tmp_path, monkeypatch, target):
    root = (tmp_path / "course").resolve()
    (root / "katas" / "phase1").mkdir(parents=True)
    (root / "tools").mkdir()
    monkeypatch.setattr(curriculum, "ROOT", root)
    monkeypatch.setattr(curriculum, "KATAS_DIR", root / "katas")
    path = (tmp_path / "writer.py").resolve()
    path.write_text(f"def run():\n    open({str(root / target)!r}, 'a').write('TABLE = 1')\n")
    module = loading.load_file(path, f"_writer_{abs(hash(target))}", label="phase0")
    guard.install()
    monkeypatch.setattr(guard, "is_kata_file", lambda filename: filename == str(path))
    with pytest.raises(guard.KataGuardError, match="opens"):
        module.run()
    assert not (root / target).exists()


def test_an_import_in_kata_code_goes_on_uncached_and_a_bytecode_write_of_its_own_is_refused(
    tmp_path, monkeypatch
):
    # the suite keeps compiled bytecode in __pycache__ (conftest.py); a module kata code is the
    # first to import has none there yet, and the import system's write of it is refused too
    root = (tmp_path / "course").resolve()
    (root / "tools").mkdir(parents=True)
    (root / "tools" / "helper_for_kata.py").write_text("VALUE = 7\n")
    cached = root / "tools" / "__pycache__" / "helper_for_kata.cpython-312.pyc"
    monkeypatch.setattr(curriculum, "ROOT", root)
    monkeypatch.syspath_prepend(str(root / "tools"))
    monkeypatch.setattr("sys.dont_write_bytecode", False)
    path = (tmp_path / "importer.py").resolve()
    path.write_text(
        "def run():\n    import helper_for_kata\n    return helper_for_kata.VALUE\n"
        f"def write():\n    open({str(cached)!r}, 'wb').write(b'poison')\n"
    )
    module = loading.load_file(path, "_importer_kata", label="phase0")
    guard.install()
    monkeypatch.setattr(guard, "is_kata_file", lambda filename: filename == str(path))
    monkeypatch.delitem(__import__("sys").modules, "helper_for_kata", raising=False)
    assert module.run() == 7
    assert not cached.parent.exists() or not list(cached.parent.iterdir())
    cached.parent.mkdir(exist_ok=True)
    with pytest.raises(guard.KataGuardError, match="opens"):
        module.write()
    assert not cached.exists()


def test_a_task_that_leaves_torchs_gradients_switched_off_is_refused():
    """Phase 16's inference answers turn gradients off for a call; one that leaves them off
    changes what every later caller of torch builds (a training graph without gradients)."""
    torch = pytest.importorskip("torch", reason="needs: uv sync --group torch")

    def switches_off(flops: int) -> int:
        torch.set_grad_enabled(False)
        return flops

    def restores(flops: int) -> int:
        with torch.no_grad():
            return flops

    try:
        assert _task("_kata_no_grad_inside", restores).read(3) == 3  # type: ignore[attr-defined]
        with pytest.raises(ContractViolation, match="grad mode"):
            _task("_kata_no_grad_left", switches_off).read(3)  # type: ignore[attr-defined]
    finally:
        torch.set_grad_enabled(True)
