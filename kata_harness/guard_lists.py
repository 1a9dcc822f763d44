"""What the guard (kata_harness.guard) refuses by name: modules a kata file may not import,
names it may not use, attributes it may not reach on any object, and what to write instead
where honest code meets one. A data table: the rules that use it are in guard.py."""

from __future__ import annotations

FORBIDDEN_MODULES = frozenset(
    {
        "pytest",
        "_pytest",
        "pytest_check",
        "pluggy",
        "syrupy",
        "pytest_timeout",
        "conftest",
        "kata_harness",
        "katas_cli",
        "katas",  # the phases' programs.py: the tests' banks, shared by identity
        "reference",
        "decoys",
        "importlib",
        "runpy",
        "builtins",
        "gc",
        "ctypes",
        # another process or thread is out of the audit hook's and the refusal's sight
        "subprocess",
        "multiprocessing",
        "threading",
        "concurrent",
        "_thread",
        "pty",
        "asyncio",
        "inspect",  # getmodule reaches JAX's private modules; frames reach the harness
        "traceback",  # walk_stack and extract_stack(capture_locals) reach the tests' frames
        "posix",
        "nt",
        "jaxlib",  # the XLA client, its cost model and parser, under JAX's refusals
        # unpickling imports any module and calls any function named in its bytes, out of the
        # scan's sight (pickle.loads(b"ctorch._dynamo\noptimize\n.")): an import by a string
        "pickle",
        "_pickle",
        "copyreg",
        "marshal",
        "shelve",
        "dill",
        "cloudpickle",
        "joblib",
        # a signal handler or timer runs kata code between the harness's checks, outside any
        # refusal (a SIGALRM armed at import compiles while no prediction is running)
        "signal",
        "_signal",
        # a patching library: mock.patch.object(Compiled, "cost_analysis", f).start() replaces a
        # library's method with no assignment in the source, and the patch outlives the file
        # (every later test of the process reads the kata's numbers as the compiler's)
        "unittest",
        "mock",
        # process-wide registries with no reader the harness can check: a handler, codec or
        # warning filter a read task registers is there for the copy that answers predictions
        "atexit",
        "codecs",
        "warnings",
        "faulthandler",
        "site",
        "random",  # its global generator is the process's (np.random.default_rng draws apart)
    }
)
# Methods that change the object they are called on: called on state an imported module holds
# (os.environ, sys.path, a module's dict), they change the whole process
MUTATORS = frozenset(
    {"update", "setdefault", "pop", "popitem", "clear", "append", "extend", "insert", "remove"}
    | {"add", "discard", "sort", "reverse", "__setitem__", "__delitem__", "__ior__", "__iadd__"}
)
STATE = "process-wide state reaches the copy of the file that answers predictions"
# Dunder methods that reach an attribute by a name given as a string, judged like getattr
DUNDER_REFLECTION = frozenset({"__getattr__"})
# Module attributes Python calls on a lookup (PEP 562): a kata file's own would build a task
# function when a test first looks its name up, outside the refusal the file loads under
MODULE_HOOKS = frozenset({"__getattr__", "__dir__"})
HOOK_NOTE = (
    " (Python calls a module's __getattr__ when a test first looks a name up, outside the"
    " refusal the file loads under: define every task function in the file itself)"
)
# os functions that start another program
PROCESS_ATTRIBUTES = frozenset(
    {"system", "popen", "fork", "forkpty", "posix_spawn", "posix_spawnp"}
    | {f"exec{s}" for s in ("l", "le", "lp", "lpe", "v", "ve", "vp", "vpe")}
    | {f"spawn{s}" for s in ("l", "le", "lp", "lpe", "v", "ve", "vp", "vpe")}
)
FORBIDDEN_NAMES = frozenset(
    {"__import__", "exec", "eval", "compile", "breakpoint", "vars", "attrgetter", "methodcaller"}
)
FORBIDDEN_ATTRIBUTES = frozenset(
    {
        "modules",
        "_getframe",
        "f_back",
        "f_globals",
        "f_locals",
        "tb_frame",
        "gi_frame",
        "cr_frame",
        "ag_frame",
        "currentframe",  # logging.currentframe: the caller's frame, like sys._getframe
        "__globals__",
        "__subclasses__",
        "__builtins__",
        "__loader__",
        "__spec__",
        "__dict__",  # jax.__dict__["_src"]: any name, by a string
        "__getattribute__",
        "attrgetter",
        "methodcaller",
        "__setattr__",  # object.__setattr__(jax, "jit", ...) is an assignment too
        "__delattr__",
        "_src",  # JAX's internals: its monitoring listeners, its compiler
        "__kwdefaults__",  # what a function keeps: the originals behind the harness's wrappers
        "__defaults__",
        "__closure__",
        "__code__",
        "__func__",
        "__wrapped__",
        "setprofile",  # the watch while a kata file loads (predict.calls_seen)
        "settrace",
        "getprofile",
        "gettrace",
        "get_event_duration_listeners",
        "clear_event_listeners",
        "_event_duration_secs_listeners",
        # setters of process-wide state a library keeps, whose value the copy of the file that
        # answers predictions reads back (a printoptions formatter holding compiled numbers)
        "addaudithook",
        "setrecursionlimit",
        "setswitchinterval",
        "set_int_max_str_digits",
        "set_printoptions",
        "printoptions",
        "set_string_function",
        "seterr",
        "seterrcall",
        "setbufsize",
        "seed",  # np.random.seed, random.seed: the global generator
        "set_state",
        "setstate",
        "setLoggerClass",
        "setLogRecordFactory",
        "register_callback",  # sys.monitoring: the predict refusal's watch (call_watch)
        "use_tool_id",
        "free_tool_id",
        "clear_tool_id",
        "set_events",
        "set_local_events",
    }
)
# Third-party libraries any phase's kata file may import (the standard library aside); a phase
# whose tasks use another one names it in its tasks.toml's `needs` (NEEDS_LIBRARIES). Another
# compiler or measuring library (torch's FlopCounterMode on meta tensors) answers a prediction
# without JAX's compiler, out of the refusal's sight.
LIBRARIES = frozenset({"jax", "numpy", "optax", "ml_dtypes", "xla_inspect"})
NEEDS_LIBRARIES = {"torch": frozenset({"torch"}), "iree": frozenset({"iree"})}
# What to write instead of an attribute refused under every name, where honest code meets it
NOTES = {
    "seed": " (the global generator is the process's: draw with np.random.default_rng(seed))",
    "modules": (
        " (refused on any object, as sys.modules reaches the tests; for IREE's"
        " context.modules[...]['main'] write iree.runtime.load_vm_flatbuffer(vmfb,"
        " driver=...).main)"
    ),
}
