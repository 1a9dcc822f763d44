"""Where PyTorch's Inductor keeps the course's compiles, and torch imported before a kata file.

Loading (:mod:`.loading`), phase 16's programs and the Inductor oracles (:mod:`.inductor`) use
these; the module holds no oracle, so the contract (programs.py) can import it.
"""

from __future__ import annotations

import sys
from pathlib import Path

from xla_inspect import inductor_capture

from . import curriculum


def cache_dir() -> Path:
    """Inductor's cache for the course's compiles: ``.cache/inductor`` in the checkout."""
    return curriculum.ROOT / ".cache" / "inductor"


def import_torch() -> None:
    """Import torch (when its group is installed), its cache and compile workers set first."""
    if inductor_capture.missing() is None and "torch" not in sys.modules:
        inductor_capture.prepare_environment(cache_dir())
        import torch  # noqa: F401  # pyright: ignore[reportMissingImports]  (the torch group)
