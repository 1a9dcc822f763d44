"""Channels from a read task to the copy of the file that answers predictions, and code that runs
between the harness's checks: kata code may not store data in process-wide objects (the
environment, a module's tables), nor arm a signal handler or a timer, nor reach a private name
through a dunder reflection method. Honest code (a Counter, ``np.append``, ``jax.config`` the
phase-7 spelling sets) is left alone."""

from __future__ import annotations

import pytest

from kata_harness import guard, loading, source_scan


@pytest.mark.parametrize(
    "source",
    [
        "import os\ndef f(table):\n    os.environ.update({'MEMO': table})\n",
        "import os\nenv = os.environ\ndef f(t):\n    env.setdefault('MEMO', t)\n",
        "from os import environ\ndef f(t):\n    environ.__setitem__('MEMO', t)\n",
        "import sys\ndef f(t):\n    sys.path.append(t)\n",
        "import numpy as np\ndef f(t):\n    np.typecodes.update({'memo': t})\n",
        "import jax\ndef f(t):\n    jax.tree_util.__dict__.pop('x', t)\n",
        "import json\ndef f(t):\n    vars(json)['memo'] = t\n",
    ],
)
def test_the_scan_refuses_storing_into_what_a_module_holds(source):
    assert source_scan.scan(source, "kata.py") is not None


@pytest.mark.parametrize(
    "source",
    [
        "import signal\nsignal.signal(signal.SIGALRM, lambda s, f: None)\n",
        "from signal import setitimer, ITIMER_REAL\nsetitimer(ITIMER_REAL, 0.05)\n",
        "import signal as s\ns.alarm(1)\n",
    ],
)
def test_the_scan_refuses_signal_handlers_and_timers(source):
    assert source_scan.scan(source, "kata.py") is not None


@pytest.mark.parametrize(
    "source",
    [
        "import jax\nsrc = jax.__getattr__('_src')\n",
        "import torch\ndef f(m):\n    return torch.nn.Module.__getattr__(m, '_orig_mod')\n",
        "def f(m, name):\n    return m.__getattr__(name)\n",
        "def f(m):\n    get = m.__getattr__\n    return get('x')\n",
        "def f(m):\n    return object.__getattribute__(m, 'x')\n",
        "def f(m):\n    return type(m).__setattr__(m, 'x', 1)\n",
    ],
)
def test_the_scan_judges_dunder_reflection_like_getattr(source):
    assert source_scan.scan(source, "kata.py") is not None


@pytest.mark.parametrize(
    "source",
    [
        "import numpy as np\ndef f(a):\n    return np.append(a, 1)\n",
        "from jax import numpy as jnp\ndef f(a):\n    return jnp.insert(a, 0, 1)\n",
        "import jax\ndef f():\n    jax.config.update('jax_explain_cache_misses', True)\n",
        "from collections import Counter\ndef f(xs):\n    c = Counter()\n    c.update(xs)\n"
        "    return c\n",
        "import jax.numpy as jnp\ndef f(xs):\n    seen = set()\n    seen.add(jnp.dtype(xs))\n",
        "class T:\n    def __getattr__(self, name):\n        return name\n"
        "def f():\n    return T().__getattr__('width')\n",
    ],
)
def test_the_scan_leaves_honest_calls_alone(source):
    assert source_scan.scan(source, "kata.py") is None


def test_kata_code_may_not_change_the_environment(tmp_path, monkeypatch):
    """However the file reaches os.environ (the scan cannot follow every alias), the change is
    an os.putenv: refused while kata code runs, so nothing is left for a prediction to read."""
    path = tmp_path / "kata.py"
    path.write_text("import os\ndef run():\n    e = [os.environ][0]\n    e |= {'KATA_MEMO': '1'}\n")
    module = loading.load_file(path, "_channels_environ", label="phase0")
    guard.install()
    monkeypatch.setattr(guard, "is_kata_file", lambda filename: filename == str(path.resolve()))
    monkeypatch.delenv("KATA_MEMO", raising=False)
    with pytest.raises(guard.KataGuardError, match="changes the environment"):
        module.run()
    import os

    assert "KATA_MEMO" not in os.environ


def test_imported_roots_sees_imports_inside_functions():
    source = "import numpy as np\n\ndef f():\n    from torch.utils import flop_counter\n"
    assert source_scan.imported_roots(source) == {"numpy", "torch"}
    assert source_scan.imported_roots("from . import programs\n") == set()
    assert source_scan.imported_roots("def broken(:\n") == set()
