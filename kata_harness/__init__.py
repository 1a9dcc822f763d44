"""The pytest harness that runs kata tests against a learner file or the reference."""

from xla_inspect.targets import prepare_environment

# Before anything imports JAX: with the tpu/gpu groups installed, JAX would otherwise print
# libtpu's start-up errors in every process and not register the deviceless GPU topology.
prepare_environment()
