"""Every kata test runs through the harness plugin (see kata_harness/plugin.py).

Where PYTHONDONTWRITEBYTECODE is set (these machines set it), pytest could not keep its
assertion-rewritten test modules, nor Python the course's own compiled modules, so every run and
every xdist worker compiled them again from source: about 5 of 11 CPU seconds of collecting the
suite. They are kept in ``__pycache__`` (ignored by git) from the first run on. Kata code still
writes no bytecode into the course (:class:`kata_harness.guard.KataGuardBytecodeError`).

The same holds for the processes the run starts (the xdist workers, the tests' child Pythons):
they inherit the environment, so the variable is dropped from it here, before they start.
"""

import os
import sys

sys.dont_write_bytecode = False
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)

pytest_plugins = ["kata_harness.plugin", "pytester"]
