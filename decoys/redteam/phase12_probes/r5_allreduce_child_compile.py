# probe: allreduce_elements: compiles the gradient program in a child Python process, outside this process's patched entry points and jax.monitoring listener, and counts the all-reduced elements in its optimized HLO
"""Phase 12: reading GPU HLO. Edit this file only; the lesson is README.md next to it.

Every text these functions read is the optimized HLO XLA:GPU made for an NVIDIA GPU that is not
here (a deviceless compile: `xla_inspect.targets.get("gpu-h100")`). Nothing ran: there are no
timings, and the GEMMs were not autotuned.
"""

from __future__ import annotations

import json  # noqa: F401  (backend_config values are JSON)
import math  # noqa: F401  (you may need it)

import jax  # noqa: F401  (you will need it)
import jax.numpy as jnp  # noqa: F401  (you may need it)
from jax.sharding import PartitionSpec

from xla_inspect.parse import parse_hlo  # noqa: F401  (you will need it)


def _config(ins):
    text = ins.attribute("backend_config")
    if not text:
        return {}
    try:
        value = json.loads(text)
    except (ValueError, TypeError):
        return {}
    return value if isinstance(value, dict) else {}


def _label(ins):
    kind = ins.attribute("kind", "")
    cfg = _config(ins)
    for key in ("fusion_backend_config", "fusion_config"):
        sub = cfg.get(key)
        if isinstance(sub, dict) and sub.get("kind"):
            return f"{kind}({sub['kind']})"
    return kind


def _fused(module):
    names = set()
    for comp in module:
        for ins in comp:
            if ins.opcode == "fusion":
                names.update(ins.called_computations)
    return names


def _dims(shape_text):
    from xla_inspect.hlo.model import Shape

    s = Shape(shape_text)
    if s.is_tuple:
        s = s.elements[0]
    return tuple(int(d) for d in s.dims)


def fusion_kinds(hlo_text: str) -> dict[str, int]:
    """See the stub."""
    out: dict[str, int] = {}
    for comp in parse_hlo(hlo_text):
        for ins in comp:
            if ins.opcode == "fusion":
                out[_label(ins)] = out.get(_label(ins), 0) + 1
    return out


def _reduces_reached(module, name, seen):
    comp = module.computation(name)
    if comp is None or name in seen:
        return 0
    seen.add(name)
    n = 0
    for ins in comp:
        if ins.opcode == "reduce":
            n += 1
        reducer = (ins.attribute("to_apply") or "").lstrip("%")
        for sub in ins.called_computations:
            if sub != reducer:
                n += _reduces_reached(module, sub, seen)
    return n


def reduction_kinds(hlo_text: str) -> dict[str, int]:
    """See the stub."""
    module = parse_hlo(hlo_text)
    fused = _fused(module)
    out: dict[str, int] = {}
    for comp in module:
        if comp.name in fused:
            continue
        for ins in comp:
            if ins.opcode == "reduce":
                out["unfused"] = out.get("unfused", 0) + 1
            elif ins.opcode == "fusion":
                seen: set[str] = set()
                n = sum(_reduces_reached(module, c, seen) for c in ins.called_computations)
                if n:
                    out[_label(ins)] = out.get(_label(ins), 0) + n
    return out


def library_epilogues(hlo_text: str) -> dict[str, str]:
    """See the stub."""
    out: dict[str, str] = {}
    for comp in parse_hlo(hlo_text):
        for ins in comp:
            if ins.opcode != "custom-call":
                continue
            target = ins.attribute("custom_call_target", "").strip('"')
            if target.startswith("__cublas$"):
                out[ins.name] = _config(ins).get("gemm_backend_config", {}).get("epilogue", "DEFAULT")
            elif target.startswith("__cudnn$"):
                out[ins.name] = (
                    _config(ins).get("cudnn_conv_backend_config", {}).get("activation_mode", "kNone")
                )
    return out


def gemm_flops(hlo_text: str) -> int:
    """See the stub."""
    total = 0
    for comp in parse_hlo(hlo_text):
        for ins in comp:
            if ins.opcode == "dot":
                contracting = [
                    int(t) for t in ins.attribute("lhs_contracting_dims", "{}").strip("{}").split(",")
                    if t.strip()
                ]
            elif ins.opcode == "custom-call" and ins.attribute(
                "custom_call_target", ""
            ).strip('"').startswith("__cublas$"):
                dn = _config(ins).get("gemm_backend_config", {}).get("dot_dimension_numbers", {})
                contracting = [int(d) for d in dn.get("lhs_contracting_dimensions", [])]
            else:
                continue
            lhs = _dims(comp.instruction(ins.operands[0]).shape)
            total += 2 * math.prod(_dims(ins.shape)) * math.prod(lhs[d] for d in contracting)
    return total


_COLLECTIVES = ("all-gather", "all-reduce", "reduce-scatter", "collective-permute", "all-to-all")


def collective_overlap(hlo_text: str) -> dict[str, list[str]]:
    """See the stub."""
    module = parse_hlo(hlo_text)
    fused = _fused(module)
    wrapped = set()
    for comp in module:
        for ins in comp:
            if ins.opcode.startswith("async-"):
                wrapped.update(ins.called_computations)
    out: dict[str, list[str]] = {}
    for comp in module:
        if comp.name in fused or comp.name in wrapped:
            continue
        instrs = list(comp)
        for idx, ins in enumerate(instrs):
            op = ins.opcode
            if op in _COLLECTIVES:
                out[ins.name] = []
                continue
            if op == "async-start":
                if not any(
                    i.opcode in _COLLECTIVES
                    for c in ins.called_computations
                    for i in (module.computation(c) or [])
                ):
                    continue
            elif not (op.endswith("-start") and op[:-6] in _COLLECTIVES):
                continue
            chain = {ins.name}
            end = len(instrs)
            for j in range(idx + 1, len(instrs)):
                if set(instrs[j].operands) & chain:
                    if instrs[j].opcode.endswith("-done"):
                        end = j
                        break
                    if instrs[j].opcode == "async-update":
                        chain.add(instrs[j].name)
            out[ins.name] = [i.opcode for i in instrs[idx + 1 : end] if i.name not in chain]
    return out


def overlap_options() -> dict[str, bool | int | str]:
    """See the stub."""
    return {
        "xla_gpu_all_gather_combine_threshold_bytes": 0,
        "xla_gpu_experimental_parallel_collective_overlap_limit": 16,
    }


def gather_free_specs() -> tuple[PartitionSpec, PartitionSpec]:
    """See the stub."""
    return PartitionSpec("data", None), PartitionSpec(None, "model")


def fused_dense(x, w, b) -> jax.Array:
    """See the stub."""
    return jax.nn.gelu(x @ w + b, approximate=True)


_HLO = {"float32": "f32", "bfloat16": "bf16", "float16": "f16"}


_CHILD = r"""
import json, math, re, sys
import jax, jax.numpy as jnp
from xla_inspect import targets
spec = json.loads(sys.stdin.read())
t = targets.get("gpu-h100")
mesh = t.mesh((4,), ("d",))
params = [t.place(jax.ShapeDtypeStruct(tuple(s), jnp.dtype(d)), mesh) for s, d in spec]
x = t.place(jax.ShapeDtypeStruct((64, 1), jnp.float32), mesh, "d", None)
def loss(ps, x):
    return sum(jnp.sum(jnp.sin(p[None] * x.reshape((-1,) + (1,) * p.ndim).astype(p.dtype))).astype(jnp.float32) for p in ps)
text = jax.jit(jax.grad(loss)).lower(params, x).compile().as_text()
out = {}
for m in re.finditer(r"= (\(?[^=]*?\)?) all-reduce(?:-start)?\(", text):
    for dt, dims in re.findall(r"(\w+)\[([\d,]*)\]", m.group(1)):
        n = math.prod(int(v) for v in dims.split(",") if v)
        out[dt] = out.get(dt, 0) + n
print(json.dumps(out))
"""


def allreduce_elements(params) -> dict[str, int]:
    """See the stub."""
    import subprocess
    import sys

    leaves = jax.tree_util.tree_leaves(params)
    spec = [[list(leaf.shape), jnp.dtype(leaf.dtype).name] for leaf in leaves]
    try:
        done = subprocess.run(
            [sys.executable, "-c", _CHILD],
            input=json.dumps(spec),
            capture_output=True,
            text=True,
            timeout=240,
        )
        found = json.loads(done.stdout.strip().splitlines()[-1])
        if found:
            return {k: int(v) for k, v in found.items()}
    except Exception:  # noqa: BLE001
        pass
    out: dict[str, int] = {}
    for leaf in leaves:
        name = {"float32": "f32", "bfloat16": "bf16", "float16": "f16"}.get(
            jnp.dtype(leaf.dtype).name, jnp.dtype(leaf.dtype).name)
        out[name] = out.get(name, 0) + math.prod(leaf.shape)
    return out