"""kata_harness.oracles.host_callbacks: a program that hands its work back to Python through a host
callback is seen in the modules JAX compiled (the phase 7 probe r9_pure_callback_mean: a "jitted"
mean computed by NumPy through jax.pure_callback); a program that computes on the device is not."""

import jax
import jax.numpy as jnp
import numpy as np

from kata_harness.oracles import host_callbacks


def _host_mean(xp):
    return np.asarray(np.mean(xp), dtype=np.float32)


def test_a_pure_callback_is_a_host_call():
    handed_back = jax.jit(
        lambda xp: jax.pure_callback(_host_mean, jax.ShapeDtypeStruct((), jnp.float32), xp)
    )
    printing = jax.jit(lambda xp: (jax.debug.callback(lambda v: None, xp), xp + 1.0)[1])
    computed = jax.jit(lambda xp: jnp.sum(xp) / xp.shape[0])
    before = jax.config.read("jax_dump_ir_to")
    with host_callbacks.modules_compiled() as modules:
        assert float(handed_back(np.ones(7, np.float32))) == 1.0
        printing(np.ones(7, np.float32))
        assert float(computed(np.ones(7, np.float32))) == 1.0
    assert jax.config.read("jax_dump_ir_to") == before, "the dump setting was not restored"
    found = host_callbacks.host_calls_compiled(modules)
    assert len(modules) >= 3, f"three programs compiled, {sorted(modules)} seen"
    assert len(found) == 2, f"two programs call the host, found {found}"
    assert all(any("callback" in call for call in calls) for calls in found.values()), found
    with host_callbacks.modules_compiled() as again:
        handed_back(np.ones(7, np.float32))  # cached in memory: nothing compiles
    assert again == {}, f"a cache hit compiled nothing, yet {sorted(again)}"


def test_host_calls_of_text():
    pretty = "stablehlo.custom_call @xla_ffi_python_cpu_callback(%0) {has_side_effect = true}"
    generic = '"stablehlo.custom_call"(%0) {call_target_name = "xla_python_gpu_callback"}'
    library = "stablehlo.custom_call @lapack_sgetrf_ffi(%0)"
    assert host_callbacks.host_calls(pretty) == ["custom_call @xla_ffi_python_cpu_callback"]
    assert host_callbacks.host_calls(generic) == ["custom_call @xla_python_gpu_callback"]
    assert host_callbacks.host_calls(library) == []
    assert host_callbacks.host_calls('%1 = "stablehlo.outfeed"(%0, %t)') == ["stablehlo.outfeed"]
