"""katas CLI."""

from xla_inspect.targets import prepare_environment

# Before anything imports JAX (see kata_harness/__init__.py).
prepare_environment()
