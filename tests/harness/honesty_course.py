"""The tiny course test_honesty.py builds: its tasks.toml, stub, reference, tests and decoys,
and the learner's files (probes) that try to pass without doing the task. A data table.
"""

TASKS = """
title = "Tiny"

[[task]]
function = "double"
title = "twice the input"
hints = ["what is 2x?", "multiply"]

[[task]]
function = "count"
title = "how many items"
hints = ["len?", "len"]
"""

STUB = """
def double(x):
    # TODO
    raise NotImplementedError("phase{n} task 1: double")


def count(items: list) -> int:
    # TODO
    raise NotImplementedError("phase{n} task 2: count")
"""

REFERENCE = """
def double(x):
    return 2 * x


def _size(items):
    return len(items)


def count(items: list) -> int:
    return _size(items)
"""

TESTS = """
import numpy as np
import pytest
from pytest_check import check


@pytest.mark.task("double")
def test_double(kata):
    got = kata.double(np.arange(4))
    assert np.array_equal(np.asarray(got), [0, 2, 4, 6])


@pytest.mark.task("double")
def test_double_raises_on_text(kata):
    with pytest.raises(TypeError, match="can't multiply|unsupported"):
        kata.double({})


@pytest.mark.task("count")
def test_count(kata):
    got = kata.count([1, 2, 3])
    with check:
        assert got == 3
"""

DECOYS = """
import pytest

from kata_harness.decoys import accepted, decoy


@decoy("double", caught_by=["test_double"], why="adds one too")
def off_by_one(x):
    return 2 * x + 1


@decoy("double", caught_by=["test_double_raises_on_text"], why="returns instead of raising")
def never_raises(x):
    return x if isinstance(x, dict) else 2 * x


@decoy("double", caught_by=["test_double"], why="dies of a NameError")
def misspelled(x):
    return 2 * y  # noqa: F821


@decoy("double", caught_by=["test_double"], why="skips the test")
def skipper(x):
    pytest.skip("not today")


@decoy("double", caught_by=["test_double"], why="is in fact correct")
def correct_after_all(x):
    return x * 2


class AlwaysEqual(int):
    def __eq__(self, other):
        return True

    __hash__ = int.__hash__


@decoy("count", caught_by=["test_count"], why="an int that equals everything")
def equal_to_everything(items):
    return AlwaysEqual(0)


@accepted("double", why="x + x")
def plus_itself(x):
    return x + x


@accepted("count", why="calls the kata module's own helper, as code in the kata file would")
def count_with_module_helper(items):
    return _size(items)  # noqa: F821


@accepted("count", why="wrongly accepted: counts one too many")
def count_plus_one(items):
    return len(items) + 1
"""

PROBES = {
    "skip_inside": "import pytest\n\ndef double(x):\n    pytest.skip('done')\n",
    "skip_module": "import pytest\npytest.skip('all done', allow_module_level=True)\n",
    "patch_reports": "import _pytest.reports\n_pytest.reports.TestReport.passed = True\n",
    "patch_check": "import pytest_check\n",
    "patch_numpy": "import numpy as np\nnp.array_equal = lambda *args: True\n",
    "patch_numpy_setattr": "import numpy\nsetattr(numpy, 'array_equal', lambda *args: True)\n",
    "harness": "from kata_harness import loading\n",
    "importlib": "import importlib.util\n",
    "dunder_import": "pytest = __import__('pytest')\n",
    "exec_reference": "exec(open('reference/phase1/kata.py').read())\n",
    "runpy": "import runpy\n",
    "sys_modules": "import sys\nplugin = sys.modules['kata_harness.plugin']\n",
    "open_reference": (
        "from pathlib import Path\n\n"
        "def double(x):\n"
        "    text = (Path(__file__).resolve().parents[2] / 'reference' / 'phase1' / 'kata.py')"
        ".read_text()\n    return 2 * x\n"
    ),
    "raises": (
        "def _halve(items):\n    return len(items) // 0\n\n"
        "def count(items):\n    return _halve(items)\n"
    ),
    "rewrite_tests": (
        "from pathlib import Path\n\n"
        "def double(x):\n"
        "    (Path(__file__).parent / 'test_phase1.py').write_text('')\n    return 2 * x\n"
    ),
    "generator_exit": "def count(items):\n    raise GeneratorExit('nothing to count')\n",
    "system_exit": "import sys\n\ndef count(items):\n    sys.exit(0)\n",
    "equal_to_everything": (
        "class Yes(int):\n    def __eq__(self, other):\n        return True\n\n"
        "def count(items):\n    return Yes(0)\n"
    ),
}
