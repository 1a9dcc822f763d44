"""The source scan follows names scope by scope: a name one function binds to what a call hands
back is not the same name in another function, while a name a function only reads, declares
``global`` or ``nonlocal``, stores into or gets back from the file's own function is still the
one that holds a library."""

from __future__ import annotations

import pytest

from kata_harness import source_scan

# phase 8's op census next to a helper that checks guesses against it: the helper's `counts`
# holds what op_census returned for a bank of jnp functions, the walk's `counts` a Counter
CENSUS_AND_CHECK = """\
from collections import Counter
import jax
import jax.numpy as jnp

def op_census(lowered):
    counts = Counter()
    def visit(op):
        for region in op.regions:
            for block in region.blocks:
                for child in block.operations:
                    counts[child.operation.name] += 1
                    visit(child.operation)
    visit(lowered.compiler_ir("stablehlo").operation)
    return counts

_S = jax.ShapeDtypeStruct((4, 3), jnp.float32)
_MINE = {"tanh": (jnp.tanh, (_S,)), "relu": (jax.nn.relu, (_S,))}

def my_guesses_checked():
    for name in _MINE:
        fn, specs = _MINE[name]
        counts = op_census(jax.jit(fn).lower(*specs))
        print(name, counts)
"""


def test_a_name_bound_in_one_function_is_not_another_functions():
    assert source_scan.scan(CENSUS_AND_CHECK, "kata.py") is None


@pytest.mark.parametrize(
    "source",
    [
        "import numpy as np\nm = np\ndef f():\n    m.allclose = None\n",
        "import numpy as np\ndef f():\n    global m\n    m = np\ndef g():\n    m.allclose = None\n",
        "import numpy as np\ndef outer():\n    m = np\n    def inner():\n"
        "        m.allclose = None\n    return inner\n",
        "import numpy as np\ndef outer():\n    m = 0\n    def inner():\n        nonlocal m\n"
        "        m = np\n    inner()\n    m.allclose = None\n",
        "import numpy as np\nbox = [0]\ndef f():\n    box[0] = np\n",
        "import numpy as np\ndef f():\n    [(k := np) for _ in range(1)]\n    k.allclose = None\n",
        "import numpy as np\nm = np\ndef f():\n    [setattr(m, 'allclose', None) for m in [m]]\n",
        "import numpy as np\ndef a():\n    k = np\n    return k\ndef b():\n    q = a()\n"
        "    q.allclose = None\n",
        "import numpy as np\nclass K:\n    def get(self):\n        return np\n    def put(self):\n"
        "        q = self.get()\n        q.allclose = None\n",
        "import numpy as np\ndef a():\n    yield np\ndef b():\n    for q in a():\n"
        "        q.allclose = None\n",
        "import numpy as np\ndef f():\n    m = np\n    class K:\n        m.allclose = None\n",
    ],
)
def test_a_library_reached_from_another_scope_is_still_refused(source):
    assert source_scan.scan(source, "kata.py") is not None
