"""Named compile targets: this host's CPU, and TPU / GPU chips compiled for without the hardware.

JAX can run XLA's TPU compiler (libtpu) and GPU compiler (the CUDA plugin) on a CPU-only host
for a *topology* of compile-only devices ("deviceless AOT"): the result is the optimized HLO,
`memory_analysis()` and (TPU only) `cost_analysis()` that the chip would get, but it cannot run.
Each accelerator target needs an optional dependency group (`uv sync --group tpu` / `gpu`).

    target = targets.get("tpu-v5e:2x2")
    x = target.place(jax.ShapeDtypeStruct((512, 256), jnp.float32))      # on one device
    mesh = target.mesh((2, 2), ("data", "model"))
    w = target.place(jax.ShapeDtypeStruct((256, 384), jnp.float32), mesh, "data", None)
    compiled = jax.jit(f).lower(x, w).compile()

What deviceless compiles cannot tell: no timings (nothing runs); GPU programs are not autotuned
(GEMM tiles are the untuned defaults) and `cost_analysis()` is None on GPU.

The environment must be prepared before JAX starts its backends (`prepare_environment`): the GPU
topology is only registered when the CUDA plugin's hardware check is skipped, and libtpu prints
start-up errors unless it is told it runs on one host. `get` prepares it, so getting a target
before the first JAX computation of the process is enough; `xla-inspect` and the katas harness
prepare it first thing.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from xla_inspect import inductor_capture
from xla_inspect.errors import InspectError

if TYPE_CHECKING:
    import jax
    from jax.sharding import Mesh

__all__ = [
    "TARGETS",
    "Target",
    "TargetError",
    "get",
    "group_missing",
    "prepare_environment",
]

_SPECS = Path(__file__).resolve().parent / "gpu_specs"

# Set (unless the user set them) before JAX initialises its backends. The TPU pair tells libtpu
# it runs on one host of a 4-chip slice (any type works; the compiled text does not depend on
# it); without them it prints an INVALID_ARGUMENT trace on every start. libtpu also takes
# /tmp/libtpu_lockfile, so a second process (a pytest-xdist worker, a second terminal) fails
# with "Internal error when accessing libtpu multi-process lockfile" unless multiple loads are
# allowed; nothing here owns a chip, so they are. The CUDA one lets the plugin register its
# topology factory on a host with no GPU driver.
ENVIRONMENT = {
    "TPU_WORKER_HOSTNAMES": "localhost",
    "TPU_ACCELERATOR_TYPE": "v5litepod-4",
    "ALLOW_MULTIPLE_LIBTPU_LOAD": "1",
    "JAX_SKIP_CUDA_CONSTRAINTS_CHECK": "1",
}


class TargetError(InspectError):
    """An unknown target name, or a target whose dependency group is not installed."""


def prepare_environment() -> None:
    """Set the environment variables deviceless compiles need, keeping any the user set."""
    for name, value in ENVIRONMENT.items():
        os.environ.setdefault(name, value)


@dataclass(frozen=True, slots=True)
class Target:
    """One compile target: a platform, a topology of devices, and what installs its compiler."""

    name: str
    platform: str  # "cpu", "tpu" or "cuda" (JAX's platform names)
    topology: str  # TPU: "v5e:2x2"; CUDA: "<partitions>x<hosts>x<devices per host>"
    description: str
    group: str | None = None  # the uv dependency group that brings the compiler
    gpu_spec: str | None = None  # a GpuTargetConfigProto text file in gpu_specs/

    @property
    def install_command(self) -> str | None:
        return f"uv sync --group {self.group}" if self.group else None

    def missing(self) -> str | None:
        """Why this target cannot compile here (what to install), or None when it can."""
        if self.platform == "tpu" and not _installed("libtpu"):
            return f"{self.name} needs libtpu: {self.install_command}"
        if self.platform == "cuda" and not _installed("jax_plugins.xla_cuda12"):
            return f"{self.name} needs the CUDA plugin: {self.install_command}"
        return None

    def versions(self) -> str:
        """The versions whose compiler output this target's text depends on (snapshot keys)."""
        packages = {"cpu": ["jax", "jaxlib"], "tpu": ["jax", "jaxlib", "libtpu"]}.get(
            self.platform, ["jax", "jaxlib", "jax-cuda12-plugin"]
        )
        return ", ".join(f"{p} {importlib.metadata.version(p)}" for p in packages)

    def devices(self) -> list[Any]:
        """The target's devices (compile-only for TPU and GPU)."""
        reason = self.missing()
        if reason is not None:
            raise TargetError(reason)
        return list(_devices(self))

    def mesh(self, shape: tuple[int, ...], axes: tuple[str, ...]) -> Mesh:
        """A mesh over the target's devices (in their topology order), e.g. (2, 2) data/model."""
        import numpy as np
        from jax.sharding import Mesh

        devices = self.devices()
        size = int(np.prod(shape))
        if size > len(devices):
            raise TargetError(
                f"a {shape} mesh needs {size} devices; {self.name} has {len(devices)}"
            )
        return Mesh(np.array(devices[:size]).reshape(shape), axes)

    def place(self, value: Any, mesh: Mesh | None = None, *spec: Any) -> jax.ShapeDtypeStruct:
        """`value` (an array or ShapeDtypeStruct) as a ShapeDtypeStruct on this target: sharded
        over `mesh` by the PartitionSpec `spec`, or on the target's first device without a mesh.
        Lowering with these makes `jax.jit` compile for the target, not for the host."""
        import jax
        from jax.sharding import NamedSharding, PartitionSpec, SingleDeviceSharding

        if mesh is None:
            if spec:
                raise TargetError("a PartitionSpec needs a mesh: target.mesh(shape, axes)")
            sharding: Any = SingleDeviceSharding(self.devices()[0])
        else:
            sharding = NamedSharding(mesh, PartitionSpec(*spec))
        return jax.ShapeDtypeStruct(value.shape, value.dtype, sharding=sharding)

    def place_tree(self, tree: Any) -> Any:
        """Every array leaf of `tree` placed on the target's first device; other leaves (and
        ShapeDtypeStructs already sharded on this target's devices) kept as they are."""
        import jax

        own = {id(d) for d in self.devices()}

        def leaf(value: Any) -> Any:
            if not hasattr(value, "shape") or not hasattr(value, "dtype"):
                return value
            sharding = getattr(value, "sharding", None)
            if isinstance(value, jax.ShapeDtypeStruct) and sharding is not None:
                if {id(d) for d in sharding.device_set} <= own:
                    return value
            return self.place(value)

        return jax.tree_util.tree_map(leaf, tree)


def _installed(module: str) -> bool:
    """Whether `module` can be imported; finding a submodule imports its parent package, which
    raises when the parent is missing too."""
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:
        return False


def _spec_text(file_name: str) -> str:
    return (_SPECS / file_name).read_text(encoding="utf-8")


@cache
def _devices(target: Target) -> tuple[Any, ...]:
    import jax

    if target.platform == "cpu":
        return tuple(jax.devices("cpu"))
    from jax.experimental import topologies

    try:
        if target.platform == "tpu":
            topology = topologies.get_topology_desc(target.topology, "tpu")
        else:
            assert target.gpu_spec is not None
            topology = topologies.get_topology_desc(
                platform="cuda",
                topology=target.topology,
                target_config=_spec_text(target.gpu_spec),
            )
    except NotImplementedError as exc:  # the CUDA plugin's hardware check ran and failed
        raise TargetError(
            f"{target.name}: JAX did not register the CUDA topology ({exc}); set "
            "JAX_SKIP_CUDA_CONSTRAINTS_CHECK=1 (or call xla_inspect.targets.prepare_environment()) "
            "before JAX starts"
        ) from exc
    except Exception as exc:  # XLA's runtime errors for a topology it does not know
        raise TargetError(f"{target.name}: no topology {target.topology!r}: {exc}") from exc
    return tuple(topology.devices)


TARGETS: dict[str, Target] = {
    t.name: t
    for t in (
        Target("cpu", "cpu", "host", "this machine's CPU (the devices JAX was started with)"),
        Target("tpu-v5e:2x2", "tpu", "v5e:2x2", "TPU v5e (v5 lite), 4 chips", group="tpu"),
        Target("tpu-v6e:2x2", "tpu", "v6e:2x2", "TPU v6e (Trillium), 4 chips", group="tpu"),
        Target("tpu-v5p:2x2x1", "tpu", "v5p:2x2x1", "TPU v5p, 4 chips", group="tpu"),
        Target(
            "gpu-h100",
            "cuda",
            "1x1x4",
            "NVIDIA H100 80GB HBM3 (SXM), 4 GPUs on one host",
            group="gpu",
            gpu_spec="nvidia_h100_80gb_hbm3.txtpb",
        ),
        Target(
            "gpu-a100",
            "cuda",
            "1x1x4",
            "NVIDIA A100-SXM4-80GB, 4 GPUs on one host",
            group="gpu",
            gpu_spec="nvidia_a100_sxm4_80gb.txtpb",
        ),
    )
}


# Groups that bring a compiler other than a JAX target: the modules each one installs.
OTHER_COMPILERS = {"iree": ("iree.compiler", "iree.runtime")}


def group_missing(group: str) -> str | None:
    """Why the dependency group ``group`` ("tpu", "gpu", "iree", "torch") is not usable here,
    or None."""
    if group == "torch":  # no XLA target: the group brings PyTorch's Inductor
        return inductor_capture.missing()
    modules = OTHER_COMPILERS.get(group)
    if modules is not None:
        absent = [m for m in modules if not _installed(m)]
        return f"{group} needs {', '.join(absent)}: uv sync --group {group}" if absent else None
    for target in TARGETS.values():
        if target.group == group:
            missing = target.missing()
            if missing is not None:
                return missing
    return None


_TOPOLOGY = re.compile(r"(?P<base>[\w-]+?):(?P<topology>\d+(?:x\d+)+)")


def get(name: str) -> Target:
    """The target called `name`: one of `TARGETS`, or a known TPU or GPU with another topology
    (`tpu-v5e:4x4`, `gpu-h100:1x1x8`). Prepares the environment (see `prepare_environment`)."""
    prepare_environment()
    if name in TARGETS:
        return TARGETS[name]
    match = _TOPOLOGY.fullmatch(name)
    if match:
        base = next(
            (t for t in TARGETS.values() if t.name.split(":")[0] == match["base"]),
            None,
        )
        if base is not None and base.platform != "cpu":
            return Target(
                name,
                base.platform,
                f"{base.topology.split(':')[0]}:{match['topology']}"
                if base.platform == "tpu"
                else match["topology"],
                base.description.split(",")[0] + f", topology {match['topology']}",
                group=base.group,
                gpu_spec=base.gpu_spec,
            )
    known = ", ".join(TARGETS)
    raise TargetError(
        f"unknown target {name!r}: one of {known}, or a TPU/GPU name with another topology "
        "(tpu-v5e:4x4, gpu-h100:1x1x8)"
    )
