"""Hostile learner code: each kind of breakage gives one clear message naming phase and task,
and the other phases still run."""

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from kata_harness import curriculum, guard, loading, source_scan

pytestmark = pytest.mark.skipif(len(curriculum.phases()) < 2, reason="needs two phases")


def test_syntax_error_names_phase_file_and_line(tmp_path):
    broken = tmp_path / "kata.py"
    broken.write_text("def f(:\n    pass\n")
    with pytest.raises(loading.KataLoadError) as raised:
        loading.load_file(broken, "_hostile_syntax", label="phase7")
    message = str(raised.value)
    assert message.startswith("phase7: ") and "SyntaxError at line 1" in message
    assert "\n" not in message and "other phases are unaffected" in message


def test_import_of_a_missing_name_is_one_line(tmp_path):
    broken = tmp_path / "kata.py"
    broken.write_text("from jax import does_not_exist\n")
    with pytest.raises(loading.KataLoadError) as raised:
        loading.load_file(broken, "_hostile_import", label="phase3")
    assert "ImportError at line 1" in str(raised.value)
    assert "does_not_exist" in str(raised.value)


def _course_copy(tmp_path: Path) -> Path:
    root = curriculum.ROOT
    for name in ("katas", "reference", "decoys"):
        shutil.copytree(root / name, tmp_path / name, ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("conftest.py", "pyproject.toml"):
        shutil.copy(root / name, tmp_path / name)
    return tmp_path


PHASE2_BREAKAGE = textwrap.dedent("""

    def mlp_jaxpr(params, x):
        return jax.jit(mlp).lower(params, x)  # a Lowered where a jaxpr was asked for


    def unused_equations(jaxpr):
        while True:
            pass


    def closure_consts(jaxpr):
        print("x" * 3_000_000)
        return []
""")


@pytest.mark.battery
@pytest.mark.timeout(240)  # every phase of a broken copy of the course, in a subprocess
def test_broken_phases_fail_alone_with_one_line_each(tmp_path):
    copy = _course_copy(tmp_path)
    (copy / "katas/phase1/kata.py").write_text("def init_params(:\n")
    solved = (curriculum.ROOT / "reference/phase2/kata.py").read_text()
    (copy / "katas/phase2/kata.py").write_text(solved + PHASE2_BREAKAGE)
    env = {**os.environ, "KATAS_ROOT": str(copy), "KATAS_IMPL": "katas"}
    # One test of the looping task is enough to see the timeout line; the other would loop 3 s.
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "katas/phase1",
            "katas/phase2",
            "-o",
            "timeout=3",
            "-k",
            "not test_dead_code_propagates_backwards",
            "-p",
            "no:cacheprovider",
            "-q",
            "--tb=short",
        ],
        cwd=copy,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    out = run.stdout
    assert len(out) < 200_000, "three megabytes of print must be cut short"
    assert "phase1: katas/phase1/kata.py does not import (SyntaxError at line 1" in out
    wrong_type = [
        line
        for line in out.splitlines()
        if line.startswith("phase2.task1 (mlp_jaxpr) returned the wrong type: expected ")
    ]
    assert wrong_type and "got Lowered" in wrong_type[0], out[-3000:]
    assert "phase2.task5 (unused_equations) did not finish within 3 s" in out
    assert "more characters cut" in out
    passed = [line for line in out.splitlines() if " passed" in line]
    assert passed, f"the unbroken tasks of phase2 must still pass:\n{out[-2000:]}"


@pytest.mark.parametrize(
    "source",
    [
        "from katas.phase7 import programs\nprograms.JAXPR_PROGRAMS.clear()\n",
        "import katas.phase3.programs as p\n",
        "import numpy as np\nvars(np)['allclose'] = lambda *a, **k: True\n",
        "import numpy as np\nnp.__dict__['allclose'] = lambda *a, **k: True\n",
        "import numpy as np\nsetattr(np, 'array_equal', lambda *a: True)\n",
    ],
)
def test_the_scan_refuses_reaching_into_the_tests_programs_or_patching_libraries(source):
    found = source_scan.scan(source, "kata.py")
    assert found is not None and found.startswith(("line 1 ", "line 2 ")), found


@pytest.mark.parametrize(
    "source",
    [
        "import jax\n_C = jax.stages.Compiled\n_C.memory_analysis = lambda self: None\n",
        "from jax.stages import Compiled as C\nsetattr(C, 'memory_analysis', None)\n",
        "import jax\nS = jax.stages\nC = S.Compiled\nC.cost_analysis = None\n",
        "import jax\nfor owner in (jax.stages.Compiled,):\n    owner.cost_analysis = None\n",
        "import numpy as np\ndef f(x):\n    type(np.float32(x)).__eq__ = None\n",
        "import numpy as np\ndef f(x):\n    getattr(np, 'testing').assert_allclose = None\n",
        "from jax import jit\nj = jit\nj.__wrapped__ = None\n",
        "import jax\ndef f(c):\n    c.__class__ = jax.stages.Compiled\n",
    ],
)
def test_the_scan_refuses_patching_through_an_alias(source):
    """A library class or function reached through another name is still the library's."""
    assert source_scan.scan(source, "kata.py") is not None


@pytest.mark.parametrize(
    "source",
    [
        "import jax.numpy as jnp\nfrom collections import Counter\n"
        "def f(xs):\n    counts = Counter()\n    for x in xs:\n"
        "        counts[jnp.dtype(x).itemsize] += 1\n    return counts\n",
        "import numpy as np\ndef f():\n    a = np.zeros(3)\n    a[np.argmax(a)] = 1\n"
        "    return a\n",
        "import dataclasses\n@dataclasses.dataclass\nclass T:\n    a: int = 0\n"
        "def f():\n    t = T()\n    t.a = 3\n    return t\n",
        "import jax.numpy as jnp\ntable = {}\ntable[jnp.float32] = 4\n",
    ],
)
def test_the_scan_leaves_honest_stores_alone(source):
    """An index or key computed with a library is not a change to the library."""
    assert source_scan.scan(source, "kata.py") is None


@pytest.mark.parametrize(
    "body",
    [
        "return shell.system('true')",
        # a fork the hook let through would leave two test processes: the child leaves at once
        "pid = shell.fork()\n    if pid == 0:\n        shell._exit(0)\n    return pid",
    ],
    ids=["system", "fork"],
)
def test_kata_code_may_not_start_another_program(tmp_path, monkeypatch, body):
    """A child process is out of the audit hook's and the predict refusal's sight (the scan
    refuses the spellings it knows; the hook refuses the rest while kata code runs)."""
    path = tmp_path / "kata.py"
    path.write_text(f"import os as shell\ndef run():\n    {body}\n")
    module = loading.load_file(path, "_hostile_child", label="phase0")
    guard.install()
    monkeypatch.setattr(guard, "is_kata_file", lambda filename: filename == str(path.resolve()))
    with pytest.raises(guard.KataGuardError, match="starts another program"):
        module.run()


@pytest.mark.parametrize("where", ["course", "chosen"])
def test_kata_code_may_not_read_inductors_cache(tmp_path, monkeypatch, where):
    """The code Inductor generated for earlier compiles (a live test's compile of the MLP a
    prediction is asked about among it) is refused to kata code, in the course's cache and in
    one TORCHINDUCTOR_CACHE_DIR names (red-team probe r3_recorded_lookup)."""
    cache = tmp_path / "chosen"
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(cache))
    if where == "course":
        cache = curriculum.ROOT / ".cache" / "inductor"
    path = tmp_path / "kata.py"
    path.write_text(f"def run():\n    return open({str(cache / 'x' / 'c.py')!r}).read()\n")
    module = loading.load_file(path, "_hostile_cache", label="phase0")
    guard.install()
    monkeypatch.setattr(guard, "is_kata_file", lambda filename: filename == str(path.resolve()))
    with pytest.raises(guard.KataGuardError, match="opens"):
        module.run()


@pytest.mark.parametrize(
    "source",
    [
        "import jax\nx = getattr(jax, '_' + 'src')\n",
        "import sys\nname = 'set' + 'profile'\ngetattr(sys, name)(None)\n",
        "import jax\ndef f(g):\n    return g.__kwdefaults__['_original']\n",
        "import jax.extend.backend as b\nsetattr(b.get_backend().__class__, 'compile', None)\n",
        "def f(g):\n    return g.__wrapped__\n",
        "import functools as ft\ndef f(fr):\n    return ft.reduce(getattr, ['f_locals'], fr)\n",
        "import xla_inspect\nput = setattr\nput(xla_inspect, 'parse_hlo', None)\n",
        "def f(names, o):\n    return list(map(hasattr, [o] * len(names), names))\n",
        "import traceback\nframes = list(traceback.walk_stack(None))\n",
        "import logging\nframe = logging.currentframe()\n",
    ],
)
def test_the_scan_refuses_computed_names_and_what_wrappers_keep(source):
    """A name built at run time reaches any attribute; a wrapper's defaults, closure and
    __wrapped__ reach the function the harness put it around."""
    assert source_scan.scan(source, "kata.py") is not None


@pytest.mark.parametrize(
    "source",
    [
        "import jaxlib.xla_client as xc\n",
        "from jaxlib import _jax\n",
        "import jax.extend.backend as b\nclient = b.get_backend()._client\n",
        "import numpy as np\nx = np._core\n",
    ],
)
def test_the_scan_refuses_the_xla_client_and_library_internals(source):
    """jaxlib's client compiles and costs programs beside JAX's refusals; a library's private
    attributes are its internals, whatever expression reaches them."""
    assert source_scan.scan(source, "kata.py") is not None


@pytest.mark.parametrize(
    "source",
    [
        "import pickle\noptimize = pickle.loads(b'ctorch._dynamo\\noptimize\\n.')\n",
        "from pickle import loads\n",
        "import _pickle\n",
        "import copyreg\n",
        "import marshal\ncode = marshal.loads(b'')\n",
        "import shelve\n",
    ],
)
def test_the_scan_refuses_unpickling(source):
    """Unpickling imports a module and calls a function named by a byte string (an import the
    scan never sees), and marshal loads code: both are a dynamic import."""
    assert source_scan.scan(source, "kata.py") is not None


def test_the_scan_leaves_a_kata_class_its_private_attributes():
    source = "class Cache:\n    def get(self):\n        return self._entries\n"
    assert source_scan.scan(source, "kata.py") is None


@pytest.mark.parametrize(
    "source",
    [
        "import jax\nsrc = jax.__dict__['_src']\n",
        "import jax\nsrc = vars(jax)['_src']\n",
        "import jax\nsrc = jax.__getattribute__('_src')\n",
        "from operator import attrgetter\nimport jax\nsrc = attrgetter('_s' + 'rc')(jax)\n",
    ],
)
def test_the_scan_refuses_reaching_names_through_a_dict_or_a_getter(source):
    assert source_scan.scan(source, "kata.py") is not None


def test_a_refused_modules_attribute_names_what_iree_code_writes_instead():
    """IREE's documented runner reads ``context.modules.module["main"]``; ``.modules`` is refused
    on every object (``sys.modules`` reaches the tests through any expression that returns
    ``sys``), so the message names the spelling that runs: load_vm_flatbuffer(...).main."""
    refused = (
        "import iree.runtime as rt\ndef run(vmfb, x):\n"
        "    context = rt.SystemContext(config=rt.Config('local-task'))\n"
        "    context.add_vm_module(rt.VmModule.copy_buffer(context.instance, vmfb))\n"
        "    return context.modules.module['main'](x)\n"
    )
    found = source_scan.scan(refused, "kata.py")
    assert found is not None and "load_vm_flatbuffer" in found
    written = (
        "import iree.runtime as rt\ndef run(vmfb, x):\n"
        "    return rt.load_vm_flatbuffer(vmfb, driver='local-task').main(x)\n"
    )
    assert source_scan.scan(written, "kata.py") is None
