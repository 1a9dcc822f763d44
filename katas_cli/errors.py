"""What `katas` commands raise for `main` to turn into one line and an exit status.

Kept apart from the modules that raise them, so `main` can catch them without importing pytest
or JAX (a command that only reads the cached state starts in a fraction of a second).
"""


class UsageError(Exception):
    """A bad argument: unknown phase or task, missing file, refused action (exit status 2)."""


class RunError(Exception):
    """Pytest stopped before reporting results (usage error, internal error, interrupted)."""


class NothingToShow(Exception):
    """The task has no recipe: a fact, not an error (exit 0)."""


class ShowError(Exception):
    """The code could not be traced or compiled (an unfinished task, an error): exit 1."""
