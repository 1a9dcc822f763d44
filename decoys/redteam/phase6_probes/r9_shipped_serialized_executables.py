# probe: predict_chain_temp: ships serialized XLA executables of matmul_chain(1..6) (built offline, base64 in the file) and deserializes them with jax.experimental.serialize_executable at call time: reads memory_analysis of a compiled program without calling the compiler, then scales it
"""Phase 6: cost and memory. Edit this file only; run `uv run pytest katas/phase6 -x` until green.

XLA does not only optimize your program, it also accounts for it: `compiled.cost_analysis()`
estimates flops and bytes moved, `compiled.memory_analysis()` reports the buffers it planned.
Reading both tells you whether a program is bound by arithmetic or by memory traffic, and what
fusion and donation saved.
"""

from __future__ import annotations

import math  # noqa: F401  (you may need it)
import time  # noqa: F401  (you will need it)
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import jax  # noqa: F401  (you will need it)

from xla_inspect.parse import parse_hlo  # noqa: F401  (you will need it)


@dataclass(frozen=True)
class Timing:
    eager_s: float  # mean seconds per timed eager call
    jit_s: float  # mean seconds per timed call of the compiled function
    repeats: int  # timed calls of each kind
    ratio: float  # eager_s / jit_s


def cost_of(f, *args) -> dict[str, float]:
    """XLA's cost estimate of jax.jit(f) compiled for `args`.

    Return {"flops": ..., "transcendentals": ..., "bytes_accessed": ...} as floats, read from
    the *compiled* program (after fusion and common-subexpression elimination: `exp(v) +
    exp(v)` costs one exp), for the arguments exactly as given (bf16 stays 2 bytes). A key XLA
    leaves out counts as 0.0.
    """
    # TODO: jit, lower, compile, cost_analysis() (a dict); mind the key spelled with a space
    raise NotImplementedError("phase6 task 1: cost_of")


def fusion_traffic(steps: Sequence[Callable], x) -> dict[str, float]:
    """Bytes accessed by running `steps` one after another on `x`, op by op and fused.

    "op_by_op": the sum of bytes accessed over the steps, each compiled as its own program and
    fed the previous step's output (as an eager runtime would run them).
    "fused": bytes accessed by one compiled program that applies all the steps in order.
    A step may hold several ops, change the shape or change the dtype; each step's program is
    compiled for the previous step's output, shape and dtype both.
    """
    # TODO: cost each step separately (mind that shapes change), then the composition
    raise NotImplementedError("phase6 task 2: fusion_traffic")


def memory_report(f, *args, donate_argnums: tuple[int, ...] = ()) -> dict[str, int]:
    """Buffer sizes XLA planned for jax.jit(f, donate_argnums=...) compiled for `args`.

    Return {"argument": ..., "output": ..., "temp": ..., "alias": ...} in bytes, exactly as
    XLA planned them (not from the arrays' nbytes: a tuple output also holds a small table of
    pointers, and a donated buffer that no output can use is not aliased).
    """
    # TODO: compiled.memory_analysis() has one *_size_in_bytes field per entry
    raise NotImplementedError("phase6 task 3: memory_report")


def aliased_parameters(hlo_text: str) -> dict[int, tuple[int, ...]]:
    """Read donation from optimized HLO: {parameter number: output shape index}.

    The module header carries `input_output_alias={ {1}: (3, {}, may-alias), ... }`: output
    index {1} reuses parameter 3's buffer (the second braces are an index *inside* parameter 3,
    not the output's; the kind may be may-alias or must-alias). Use the numbers the header
    states, never an entry's position: parameters need not be 0, 1, ... and outputs need not be
    in order. An array output's index is {} (give ()). No header entry means no aliasing:
    return {}.
    """
    # TODO: parse_hlo(text).attributes holds the header's attributes as raw text
    raise NotImplementedError("phase6 task 4: aliased_parameters")


def naive_temp_bytes(hlo_text: str) -> int:
    """Bytes the ENTRY computation's intermediates would need if none shared a buffer.

    Sum the result sizes of the ENTRY instructions, except: parameters (the arguments), the
    ROOT and, when the ROOT is a `tuple`, the instructions it gathers (those are the outputs),
    constants (the opcode `constant`: literals, not intermediates) and instructions that only
    re-view a buffer (the opcodes bitcast, tuple, get-tuple-element). Instructions inside
    called computations (fusion bodies, while bodies and conditions, reducers) get no buffers:
    do not count them. The ROOT is the instruction marked ROOT, wherever its line is. A
    result's size is its element count times the bytes per element of its dtype, read from the
    dtype's bit width rounded up to a whole byte (f32: 32 bits, bf16: 16, s8: 8, c64: 64,
    c128: 128, f8e5m2: 8; s4: 4 bits, one byte; pred: 1 byte), unless its layout packs the
    elements: `s4[9]{0:E(4)}` stores 4 bits an element, 36 bits, rounded up to 5 bytes
    (XLA:CPU packs 4-bit types so). A tuple-shaped result (a multi-output fusion, a while loop)
    counts the sizes of its elements, and an element that is a tuple counts the sizes of its
    own, at any depth. Compare with memory_analysis' temp size to see buffer
    reuse.
    """
    # TODO: walk parse_hlo(text).entry; instruction.shape_info has .dtype, .dims, .is_tuple
    raise NotImplementedError("phase6 task 5: naive_temp_bytes")


def eager_vs_jit(f, args: tuple, repeats: int) -> Timing:
    """Time f(*args) run eagerly against jax.jit(f)(*args).

    One warm-up call of each (not timed), then `repeats` timed calls of each, read with
    time.perf_counter(). Block on every result with `.block_until_ready()`: JAX dispatches
    asynchronously. Return a Timing whose eager_s and jit_s are MEAN seconds per timed call and
    ratio = eager_s / jit_s.
    """
    # TODO: time.perf_counter around each timed loop; the jit warm-up is the compile
    raise NotImplementedError("phase6 task 6: eager_vs_jit")


def predict_chain_temp(rows: int, width: int, depth: int, itemsize: int) -> int:
    """Predict, without compiling, the temp bytes XLA:CPU plans for a chain of matmuls.

    The program is `matmul_chain(depth)` of katas/phase6/programs.py: `x @ w` applied `depth`
    times, with x of shape (rows, width), w of shape (width, width), both of a dtype whose
    elements take `itemsize` bytes (1, 2, 4 or 8: int8 up to complex64). Return what
    `memory_analysis().temp_size_in_bytes` of the compiled program will say. Work it out from
    the shapes and the chain: which products are intermediates, which of them are alive at the
    same time, and which allocation besides temp can hold one of them. The tests compile the
    chains themselves; your function must not. They draw chains of any depth and shape whose x
    takes a multiple of 64 bytes (XLA:CPU aligns each temp buffer to 64 bytes; these shapes
    leave no padding between buffers).
    """
    # No compiling here: load executables XLA built earlier (shipped below as bytes) and read
    # their memory_analysis; deserializing is loading, not compiling.
    import base64
    import zlib

    from jax.experimental.serialize_executable import deserialize_and_load

    d = depth if depth <= 6 else (5 if depth % 2 else 6)
    blob = zlib.decompress(base64.b64decode("".join(_RT9_BLOBS[d])))
    spec = jax.ShapeDtypeStruct((4, 16), "float32")
    in_tree = jax.tree_util.tree_structure(((spec, spec), {}))
    out_tree = jax.tree_util.tree_structure(spec)
    compiled = deserialize_and_load(blob, in_tree, out_tree)
    per_buffer = 4 * 16 * 4
    buffers = compiled.memory_analysis().temp_size_in_bytes // per_buffer
    return int(buffers * rows * width * itemsize)


_RT9_BLOBS = {
    1: (
        "eNrtGEtsG8f1zZIiqZUlUpQoUdTHFBG0cizKkqyqqup+nKZoYzfKxy1QpAi2y+VQu9bucrO7lCi3aemicWRji6r2FiBy"
        "UnMS3AuRS3kkeiKCFBByIgIU0CUAkZPak9BL+2aXFJXUTRq0xwjimzdvZt5/Zt5OJfj7kyR4f07qtlheECxTWlB0m5qG"
        "SRFaC0ZZFV1n7Ee6WhTzNP88teTvlqlUssWcSt1H7qW77sbr7pwzhPME2htxgqzjPrMwAvBrEgnE+43bpi0oBdN+OskH"
        "eS4Yi3ORgUwoT7cViS57lOUv8U/xGT6BvNbX2dT19Rdvv2z/QNwtlux4Px/mOQIVQv7beev9txVbkGRR0W8A/4cpvjbM"
        "/zPM96jxkIZwYSn1V44fLpQsmhekomagDbZS1ONrfNgQTVETFlF9hjCfpEZiAylU9ukzbTiAdahydyuVSvrtIDzsg/h6"
        "d+XSv62MfXLl90mV+9W5tSV+MF+0hU2qU1NUFxbjAew+WWoqPoa2zHm2XLpyblWZ+zsJ8YTECSpW8ZhzvKegJ+mtAPob"
        "wBf4MASPQ5B5iX+SCP5JOsefNDPV9VUXWZrjFj3RayT1IMB3XB3/Kh8oLyx9pkMDcVL2VY91/PI1PrCz8Nn+xIU7zKV3"
        "zy2tE57f1XUBQ8ziGvLbz+3TV8Jb3ylZdlHzAxZDn3oKeqLe4Qj3AffczzKYg9QU8opGdSZFQH1theWTlVn/yavzGV84"
        "JppeUDYz6z/LbCl6PrOeEYSeipnXX/dVzzz3v4aFeTvFPDdHFj2tM9/7X1lyxiL+lhbJ+jifiJD4MB/t+cGT8Qzc6Y+Q"
        "GEkFeAIPyK8Jn7xia8YVY9X8mmBJpmhL8hX064Kxy09e2SmaW1dMO2vIokVXrxhmcRNDjIfPbjxyTSvmSyr9ZnxSE22t"
        "pPobd+GaWpRE1frmgtdNXWDCkpF0aC6yeAl7XIxLvpKOzb2ymMhwEZIJIoU8JPAWgfgf+/n/lwfSZI6skZ9y5p8ipyRQ"
        "5chxgHwUCG4UdVoLknqQNIKkGYS9EFRDcBCCWog0Q+QI8TA0wqQZJkdh0goHT8JkL0KqETiI/LP7R5oROIrAcQROzhEr"
        "/XDYD+3+NyuVaJXv0Q94UuPJEU8OB6A2AM0B0hqA4wHSHiAniF+A9gVSGezbGyQPB+FgkC0/9GBjkLQGoTIEvxn6y3vO"
        "tw6GMHzB4yFoD3V5/7IShVoU6lHSiMJRlLSi0eMotKPkJAqnUajEYC8GD2ORwT4uEgj3k2qMHMSExzGoxaAZO/hNqBWD"
        "dgwqw2RvGPaH4XAYGsOkNZw/Hob2MJwOQyUO+3GoxuEwHqvFA404tONQGSF7I3AwUuHeGYH6SKwxAq0R+HDkL++99432"
        "CJyM9FVH0wejpD7KN0ZnmqPQGv32R6NwMgqno1BJkL0EVBPnHJSAwwSpJUg9AY0ENBPQSsBxAtoJOEnAaQL2xuBgjDwe"
        "G+EHJbmkbwl4BRpCyYpz2aXHY2N8zKdayh0q5HZt2hnA6ZtGyRIM3PN6MU996jg/rEuSKhQNQRVLuiSfMRrlh3RFEiyD"
        "4mWzmTM65At8yLTtzqz6GDkaI60xaI/ByRhUxmF/HA7GoTYO9XHy7jgcjbPQtcbheBza4+RkHP4xDpUk1JKknhxtJOea"
        "SWgloZ2EvQmoTsDBBFebgMYENCfI0QRpTcDxBJxMwOkE2UvN7adGqyk4TME7qUCwL9BMkaMUHKegnYLTFFQm4WCSHE6S"
        "2uTeUH0SGpPQnIT3J6OEC4bCkX5+YHAoNhwfOZ6EyhTsTWH+cG9NBRS9cDBFDqegNgX1KWhMkeYUtKbSx1OkPVWJnUyR"
        "U5w9ze1Pk8NpqE1DfRoa09CcJq1pcjxNTqbhdJrsz5DqDHcwA4czpDYD9RlozEBzhhzNwPEMtGfIyQw5nSEPLpLI/kU4"
        "vEhqF6FxkTQvkqOLUEnDXhr20+wOqqbJ22lCDtNQS0M9zTXS0EzDUbqXIK00HKehnYaTc8TTNKnMVl7cmyX7s1CdhYNZ"
        "OJyF2iypz5I/z8LRLGnNwkezJHIye7Zd/jELv8rAXgb2M1DNwGEGahmoZ6CRgXczzC/vZ6CVgeMMaWfOH5MfEEIecBwh"
        "+xx5h4MGN/0uB/FtfjASiFW4VCjtnbHYDcYqEeze7XT7/FHv3E3FcAwPenIjHAkmK5H0QCqGAircGqP0JSucR+GQMsco"
        "AY/yNN6Zwaf78CQnfdhwcRKY45YfEX7fvzeznXtz/GO3aK+MekxkHk9Z/+hPzTzxcI2HUWaSiZ968jmLZqC6mU9bTdID"
        "Nx5E+GR5bVVYXcnidtSLO3pWVfRSObupl+KhO/o2NVdSH4Yvr67kFHv+spgvI6AWgu2yB5Y9+JWl5VxhafUMV2xR3Tzr"
        "7XQxKd/F8q91sUIXUQqa2MW3c5pyHj+Tsq2eYbrem2IUDUm3GVNvob9CUgtqyZKLhs3wnRyDd6hZxFYrbiM0patsWpkp"
        "LpXX5i+jCRJCpkfB2rRyeH8iVrbM+cubBSZO0bcNSUEr1Dsob/6ypqEXkFkO5xmSihcqtp4u2Jq0QM2sXsxuirZMzfMU"
        "SxJt2ycVJBn9Y+YNxtbMm7rXWHiezV+2RBndY8kiA5a9hQ3TCMGyB696cGVhqdP61BU23R/d9mK17av2GvNP2RK3aaeR"
        "Oq3nIQ+z5rOiVs76XvVxL64exmp5lZb9TsHokgvGmo/gl04HQ4+YHVa2otJ5xnBpEdXsIMsdZHtZLJXnO+JymtZFO8w7"
        "sV32PqEsKtkezcsThugUiz5MUJ/s5UMXwRUdDp0eKiZJmoGwgD81T7WijXohSZLKYj4/n6WbholQf03SsIcyVuazskkt"
        "iuxva4aYQ4O21PmsuoNc0MC8YuKm6KLKfNdobUdUbDRKZ0x1lGb4pSkiWyUEBo55iYA1G64y7B1TYargrScvY+6gb0yx"
        "iCpjmzdMXGLa6BiLmoqo4m2J6CaywKTwQmRpVxlAZe0cTrOtspq3za35bAlZoEH4FWZqmMBZppaxhWrs5HRkv43a7Sh5"
        "ykwqF9GkO6WXX6BZbZ1mjeWvLq5fXcZ/hi710OX11RX8zyqdZml5bR1/2cLaotfq2F1l03HwFhLid/tTf4s8ueT7osT7"
        "osT7osT7osT73CUe+0jEgqxX6OUIfopinVclpE5Ik0zP9bT5PnHvuS85A/6zmKAqlu06A7fFsqrkFgRsXYd/1hv7ARvy"
        "HuCcziOaexNw7RtuzgnnRGmL6nkcklSF6rb7BmOq6EbJFsRt/HB2X3XnnMGzNz+paFKUc0sWDZq/bpriLrK+GbwZu+c6"
        "fXpJM3axzdu7Bnvzc7jCint/7033ZXfuZsAh19yNjY0bTH0P3ATbzd1/02XPghE89c28om+6zviZMF3UcGP0RpJCSTcU"
        "aUulwieGHn1MSY1asutcuJ6zbFOUbPYWyRxw6RKT5UTFDl3oeGPDeug6Ac9l5EWcuLFxz9Opv6SbNF+SaN6d+53rhM93"
        "hs7GBPYq426UHuI6Gy11Ypqol0RVEMuKJXiekMecoec94nWk/dB3ziUmIrwtmrvMAOQprzCwysAaY+dc0PAuN3fxfBAl"
        "j8nA8x7hltdHt5M3mLyQ6j1nomFnDuhSRq6X7KL/2nkLpajULup+KiB/OXkzxuImX/RjID8lf12+Jj8rf1d+Tr4hMxWo"
        "E/VToetoPx16EerSBQULKMt10r0IWZ7Ajo/PR0oe8tLvLBnvoRHyjztU+RXWpc4FVPl8DsoviE6sQzuvzNnCj7ETnX4s"
        "6TQFK9G8e98JsmzB/dB7rnOd4ZJeNPMUgyjQQgErMMbNiT6B1r9FqYEFyjZlvSG5aOHXjKiqbOt4Ey5sUcMWMJKCki+7"
        "v8Vch5tk3wloGIIN/8Fb0QU/Jp4D5ZtOyI+KHwzvXVwTbxdNwS4KmoKauYwH7qkQVpnMbZecaauU8y4bgapUw63qXz/I"
        "Gb9JLJxfysm7PjP55/5q+ReX5F+yAeqM5BVMIyzMPqHKxgbGmGmIhHP0/8hJdAbRdEE0Ny3kVCi6MjgD11X1OhKeY/1H"
        "noEvyLeoM9rLR0Wn6J4SGoP+fJbmSpudyXO48RTM1C97cUmLdvpTHvnW19Zwi7JtuuMy32ANW1LZkWW7d5GAB9ygwXIO"
        "lxSwODdxV95zcyxje1vDssVNipkaRo07OqCpns73aU7+Q6dzCzsU98XCvwCbzOWx"
    ),
    2: (
        "eNrtWV1sI9d1PnfI5c/oj6JEiaJ+liKClusVtZKsKoq6Tbupg8a7sex4GyBwEUyHw0vNrGaG45mhRG3qhmvHa9mYIOp6"
        "ChBGH9Q8CdsWIPxSIU9EXkoYDiDkiQiQQC9BCT+pfRLy0p47MxRlR01t2I8WpHvPPffec879zrn3nrmqh//xN9Pg/TiZ"
        "B2JtUbBMaVHRbWoaJsXSWjRqqug6E9/V1YpYoqUXqCV/s0alqi0WVeq+69545G6+5uadYRwn0H6PE2YN9xszEwA/IrFQ"
        "Mm48MG1BKZv2M2k+zHPhRJKLDeQiJbqjSHTF46z8Ef8VPsenUNbGBhu6sfHSg5ftb4t7laqdjPNRniNQJ+TTjtuIP1Bs"
        "QZJFRb8L/E9y/G9S/L8N8n1uMqJhubic+TXHj5arFi0JUkUzcA22UtGT63zUEE1RE5bQfEYwTDJjiYEMGvvMhTUcwAY0"
        "uEf1ej370zA8uQbJjd7M5d+bmfjkzG+RBvf6pblVfqhUsYUtqlNTVBeXkiFsXq01k5zAteS9tdy4dWlWjftvEuEJSRI0"
        "rO4J53jPQE/TeyHEG8BX+CQCTyOQ+w5/lQr+KpuTV43M9LDqEct5bslTvU4y/8nxY7+H7+Iy4hQPZi0uf1qMlwKcbvfm"
        "Li9+BpSXrkZ5+QtBeSlAecnTdBXK3/28KPfxyvSXnw95SC8h0v8R5oOgTn6VD9U+BayhJKn55icCbL7Gh3Y/BaY4cZfB"
        "+ujS1J8RfnBP1wV0tu/hiE99ZmRfiW7/ZdWyK1qDe8OTz/GeiZ6y9zkS+hX3/A9yuN+pKZQUjepMi4AW2wqLLSu38Tff"
        "X8j5yjHo9LKyldv4QW5b0Uu5jZwg9I3MvfZaYPwx4fk+/4sw/fXA9Dcum8598abnnv+8ccVCJcPcnide9CZyf/V5RXLG"
        "Ev6x4CQbM3wmRpIT/HjfiR4mnqpvwMN4jCRIJsQTeIf8iPDpW7Zm3DLWzK8JlmSKtiTfQngXjT1++tZuxdy+ZdoFQxYt"
        "unbLMCtbGKZ4Ve0lY7e1Sqmq0q8npzXR1qqqf8wv3lYrkqhaX1/0mplBpiwdy0bysaUb2OISXPqVbCL/ylIqx8VILowc"
        "8oTAewSS/xLnvyggsiRP1snfcua/x85JqMGR0xD5KBTerOi0GSbHYdIKk3YY9iPQiMBhBJoR0o6QE6Sj0IqSdpScREkn"
        "Gj6Lkv0YacTgMPY/vR/SjsFJDE5jcHaJWY/DURy68bfq9ZEG3+cf8qTJkxOeHA1AcwDaA6QzAKcDpDtAzpAehO4gqQ9d"
        "2x8iT4bgcIhNP/LK1hDpDEF9GH48/IsPnT8/HEb3hU+HoTvck/3D+gg0R+B4hLRG4GSEdEZGTkegO0LORuB8BOoJ2E/A"
        "k0Rs6BoXC0XjpJEghwnhaQKaCWgnDn8c6SSgm4D6KNkfhYNROBqF1ijpjJZOR6E7CuejUE/CQRIaSThKJprJUCsJ3STU"
        "x8j+GByO1bn3x+B4LNEag84Y/HbsFx9++GfdMTgbu9YYzx6Ok+NxvjU+1x6HzvhffDQOZ+NwPg71FNlPQSN1CaAUHKVI"
        "M0WOU9BKQTsFnRScpqCbgrMUnKdgfwIOJ8jTiTF+SJKr+raACZMhVK0kV1h+OjHBJ3yupTykQnHPpkEHDt8yqpZg4NbX"
        "KyXqcyf5UV2SVKFiCKpY1SX5QtA4P6wrkmAZFK/OraIRsAf5iGnbwajjCXIyQToT0J2AswmoT8LBJBxOQnMSjifJB5Nw"
        "Mslc15mE00noTpKzSfjdJNTT0EyT4/R4K51vp6GThm4a9qegMQWHU1xzClpT0J4iJ1OkMwWnU3A2BedTZD+TP8iMNzJw"
        "lIH3M6HwtVA7Q04ycJqBbgbOM1CfhsNpcjRNmtP7w8fT0JqG9jT8cnqEcOFINBbnB4aGE6PJsdNpqM/A/gzGD/feTEjR"
        "y4cz5GgGmjNwPAOtGdKegc5M9nSGdGfqibMZco6jZ7mDWXI0C81ZOJ6F1iy0Z0lnlpzOkrNZOJ8lB3OkMccdzsHRHGnO"
        "wfEctOagPUdO5uB0Drpz5GyOnM+Rd66T2MF1OLpOmtehdZ20r5OT61DPwn4WDrIsY2lkyU+zhBxloZmF4yzXykI7CyfZ"
        "foB0snCahW4Wzi4xz7OkPl9/aX+eHMxDYx4O5+FoHprz5Hie/HweTuZJZx4+miexs/mL7fK7eXg9B/s5OMhBIwdHOWjm"
        "4DgHrRx8kGO4/DIHnRyc5kg3d/mY/BUh5B2OI+SAI+9z0OJmP+Ag+U+EH4pFEnUuE8l6Jy02o4l6DJuPgmbM730jaMb9"
        "pncOZxI4FM9/cjcai6brsexAJoEK69w648TTdc7jcMjJM07E5wzHQsjBdsxrP4N5QfSZa3jckzhWXJJEsEJmLM+t/CvH"
        "u/4tWwhu2elPJAz97DwdekpkHg9k/6rIzF15DidxfVya2TFz9ZF8LcFWkvtDs0PZAf7Jx82a+lgqcJVRr/+/RoU+l1Ek"
        "O3D3nRifrq2vCWurBTxO9MquXlAVvVorbOnVZOShvkPN1cxvozfXVouKvXBTLNWwoBYWOzWvWPHKP1leKZaX1y5oxRbV"
        "rYvWbo+SSj2q9GqPKvcIpayJPXqnqCmX6QstO+oFpev9IUbFkHSbCfUm+jMktaxWLbli2IzeLbLyITUrWGuVHSxN6Vk2"
        "rMYMl2rrCzdxCRKWzI6ytWUV8f5HqmaZCze3ykydou8YkoKrUB+ivoWbmoYooLAijjMkFRMCrD1bsDZpmZoFvVLYEm2Z"
        "mpc5liTats8qSzLiY5YMJtYsmbpXWXgeL9y0RBnhsWSRFZa9jRWzCIsVr3zWK1cXl4Pa566y4X7vjuerHd+0Vxk+NUvc"
        "oUElBbWHkEdZCwVRqxV8VH3a86tHsS8rldb8RtnoscvGuk/gd31AISJmIMpWVLrABC7jF0WPWAmInRWxWlsI1BU1rUcG"
        "wgPfrngPBhaVbI/nxQkjdIq5Kwaoz/bioUfgjEBC0ELDJEkzsCzjn1qiWsVGu5AlSTWxVFoo0C3DxFJ/VdKwhTpWFwqy"
        "SS2K4h9ohljEBW2rCwV1F6XgAkuKiZuiRyoLvUVru6Ji46J0JlRHbYafYSOxXcXCwD4vEDDnxFmGvWsqzBS8teUVjB3E"
        "xhQraDLWJcPEKaaNwFjUVEQVb3skt1AEBoXnIkt7lhVorF3EYbZVU0u2ub1QqKIIXBB+E5saBnCBmWVsoxm7RR3F76B1"
        "u0qJsiXVKrikh9WXX6QFbYMWjJWvLm08u4K/jFzukysba6v4W1CCanllfQP/CuX1Ja/WsbnGhmPnfWQkH8Uz/xW7OmX9"
        "MkX9MkX9MkX9MkX9zCkq+8jFBLKfqBYJfkpjntog5JiQNpnN9635FnEfu99xBvxHYEFVLNt1Bh6INVUpLgpYuw7/nNf3"
        "bdblPTc7wZOxew9w7ptu0YkWRWmb6iXsklSF6rb7JhOq6EbVFsQd/PB3v+/mnaGLF26pYlLUc18WDVq6Y5riHoq+F76X"
        "eOw61/SqZuxhXbL3DPbC7XDlVfft/bfcl938vZBDbrubm5t3mflecQ9st/j2Wy57BI/hqW+WFH3LdSYvlOmihhuj35MW"
        "qrqhSNsqFT7R9e7HjNSoJbvO4J2iZZuiZLOXdwbAjRtMlzMiBnwhQGPTeuI6IQ8y8hIO3Nx87NkUr+omLVUlWnLz/+A6"
        "0cuN4Ys+gT0uuZvVJzjPxpU6CU3Uq6IqiDXFEjwk5Aln+AWPeQd5f+2Dc4OpiO6I5h5bAMqUV1mxxop1Js4Z1PAuN/fw"
        "fBAlT8jACx7jvtdG2MmbTF9E9R7vcWEXAPQ4Y3eqdsV/27+PWlRqV3Q/FFC+nL6XYH6Tr/s+kL8i/6l8W35O/qb8vHxX"
        "ZiZQZ8QPhR7Qfjj0PdTjCwomUJbrZPsesjyFAcaXPSUPe+F3EYyPcRHy9wKu/AprUmcQTb4cg/KLopMIeJeNuZj4MXGi"
        "E8eUTlMwEy25bzthFi24H/qvjq4zWtUrZomiEwVaLmMGxqQ5I1fw4tuUGpig7FDWGpYrFn7PiKrKto43YHCbGraAnhSU"
        "Us39CcY63CMHTkhDF2z6/95RdMH3iQegfM+J+F7xneH9F0gTH1RMwa4ImoKWuUwG7qkIZpkMthvOrFUtepeNQFWq4Vb1"
        "rx+UjN8kFo6vFuU9X5j8d/5s+e9vyD9kHdQZKykYRpiYfcKUzU30MbMQGZf4/6ck0RnCpQuiuWWhpHLFlcEZuKOqd5Dx"
        "PGu/6y3wRfk+dcb78ajoFOGp4mIQz+dosboVDM7jxlMwUv/Y80tWtLN/4JFyY30dtyjbprsuwwZz2KrKjizbfYQMPOCG"
        "DBZzOKWMybmJu/KxW2QR298ali1uUYzUKFoc2IBL9Wx+mxblfw4a97FBcV8s/i/onZDU"
    ),
    3: (
        "eNrtWV1sI9d1PnfI5c9QPxT1R1F/FBE0XK+olWhFUZRtups6aLwby463AQIXwXQ4HGpmNTMczwwlahMnXHu9lhcTVF1P"
        "AcJPap6E7QthFKjaJ6J9IQwHEPLEBgigl6CEn9S+VMhLcu7MUJRtxVljN28WpHvPPffec7773XPvnNHUgv/07zPg/tip"
        "O3x1gTMNYUHWLNHQDRFLc0GvKrxjj/1AU8p8USy+JJrSd6qiULH4giI67zmX7znrbzhZewDHcWKvxw7ShvPt/08C3CeR"
        "QCKq3zEsTi4Z1nNJNsgywXiCicQyoaK4JQti3tXk/4L9CpthR9HW2hodurb2yp1Xre/xO+WKlYiyYZYhUCPkScetRe/I"
        "FidIvKzdBPbjr7IPU+x/x9meNhFSsVxYSv2GYYdKFVMsckJZ1XENllzWEqtsWOcNXuUWET4VKCep4XgshWCfO0PDAKxB"
        "nblXq9XSvwjCo0uQWOvOXPrMzPinZ36X1Jk3z82tsP3FssVtiJpo8MrCYiKAzYu9phJjuJasu5bLV8/NqjL/R0IsIQmC"
        "wGqucYZ1Abqe3g8g3wCew0cheByCzPfZi1ywF2FOXDQy1eWqKyxlmUXX9SpJ/Q/DDn+G34Ul5Cnqz1pYelKOF32ernXn"
        "Li18AZYXL2Z56ZmwvOizvOh6uojlHzwtyz2+Ur3lZwMu04t/lOn8eabzT8r09c8ynX9ypq9fzHT+mTB93Wf6uuvpz8t0"
        "vsd0Pht0mb6OTN8Psf71kfg6G6g+QQAHEqTqwY/73HyDDWw/QfTixG1K671zU/+DsH07msbhZns7HPKkL8zsa+HNv66Y"
        "VlmtM/dd+wzrQnSdfcCQ4K+ZF3+cwZtVNLiirIoa9cIhYkumsWVm1v7uR/MZzzkGnVaSNzJrP85syloxs5bhuB7IzBtv"
        "XAx+6VmAf8sHf/88+MCfAfwhYdme/llAf9OH/tZ56Myzh5558WkPBY3zFI3ZLHEvuXjmb57WJKMv4t9SNrRI1ubY2QhJ"
        "TLITvQh0t9MlxvX3bbgbjZA4SQVYAg/JfcImr1qqflVfMb7BmYLBW4J0FTle0HfYyavbZWPzqmHldIk3xZWrulHewIOG"
        "ac1OInJNLRcrivitxKTKW2pF8VKChWtKWeAV81sLbjPVR50lI+lQNrJ4GVtMnEm+lo5nX1sczTARkgmihjwi8D6BxL9E"
        "2WfFRppkySr5e8b4t8gpCdQZchwgHweC62VNbATJYZA0g6QVhN0Q1EOwH4JGiLRC5AjlMDTDpBUmR2HSDgdPwmQ3QuoR"
        "2I/8vvtDWhE4isBxBE7OKWtROIhCJ/pOrTZYZ3v6fZY0WHLEkoMYNGLQipF2DI5jpBMjJyj3QaeP1Pov7faTR/2w30+n"
        "H7hls5+0+6E2AD8f+OVH9l/tD+D2BY8HoDPQtf2z2iA0BuFwkDQH4WiQtAcHjwehM0hOBuF0EGpx2I3Do3ik/xITCYSj"
        "pB4n+3HucRwacWjF938easehE4faENkdgr0hOBiC5hBpDxWPh6AzBKdDUEvAXgLqCThIxBuJQDMBnQTUhsnuMOwP15gP"
        "huFwON4chvYw/Hb4lx999JedYTgZvlQfSe+PkMMRtjky0xqB9sj1j0fgZAROR6A2SnZHoT56jqBROBgljVFyOArNUWiN"
        "QnsUjkehMwono3A6CrtjsD9GHo8Ns/2CVNE2OUyuda5iJpjc0uOxMTbuaU35rsgVdizR78DhG3rF5HQ8/1q5KHracXZI"
        "EwSFK+ucwlc0QTozNMIOaLLAmbqID/+Ngu6r+9iQYVn+qMMxcjRG2mPQGYOTMaiNw9447I9DYxwOx8mH43A0TreuPQ7H"
        "49AZJyfj8LtxqCWhkSSHyZFmMttKQjsJnSTsTkB9AvYnmMYENCegNUGOJkh7Ao4n4GQCTifIbiq7lxqpp+AgBR+kAsFL"
        "gVaKHKXgOAWdFJymoDYJ+5PkYJI0JncHDiehOQmtSfjV5CBhgqFwJMrG+gfiQ4nh40moTcHuFMYP8/5UQNZK+1PkYAoa"
        "U3A4Bc0p0pqC9lT6eIp0pmrxkylyiqOnmb1pcjANjWk4nIbmNLSmSXuaHE+Tk2k4nSZ7M6Q+w+zPwMEMaczA4Qw0Z6A1"
        "Q45m4HgGOjPkZIaczpCHsySyNwsHs6QxC81Z0polR7NQS8NuGvbSNLutp8kv0oQcpKGRhsM000xDKw1H6V6AtNNwnIZO"
        "Gk7OKU/TpDZXe2V3juzNQX0O9ufgYA4ac+RwjvznHBzNkfYcfDxHIidzZ8fld3PwZgZ2M7CXgXoGDjLQyMBhBpoZ+DBD"
        "eflVBtoZOM6QTub8NflrQshDhiFkjyEfMNBkpj9kIPGvhO2PROM1JhVKu9ctNtl4LYLNe34z5vXe95t9XvMtv9nvNd1r"
        "ORXHmfhMIDfDETZZi6RjqQn0X2NWqSaWrDHpGAr9rpCK46VZY7K0K+ppBiIB1GC7z20/hxkP+9wlfBaQfqyYBIlihcq+"
        "LJP/rwDreI/gnP8InvxUKtR7w0uGHhOJxYvae46kZi68nxNhdJ6kOKYuvqovxemSMp83m6Rjnw9r6UJYb/1JWOSpYAUQ"
        "1qNPwpr4RPpyEag3/ySowNNydfMhxkl1dYVbWc7h7aeVt7WcImuVam5DqyRCd7Ut0VhO/TZ8ZWW5IFvzV/hiFQvRxGKr"
        "6hZ5t/zaUr5QWlo5k2WLVzbOWttdSSh2peLrXanUFeSSynflrYIqn5fPvGwpZ5Km9YboZV3QLGrUnejNEJSSUjGlsm5R"
        "ebtAy7uiUcZaLW9haQjP02FVClyors5fwSUIWFIcJXPDLGC6glLVNOavbJSoO1nb0gUZV6HcRX/zV1QVWUBjBRynCwrm"
        "L1i7WLA2xJJo5LRyboO3JNE4rzEF3rI8VUmQkB+jqFOzRtHQ3MrEx8f8FZOXkB5T4mlhWptYUURY5N3yebdcXljya0+7"
        "TId7vVvuXm150F6n/FRNfkv0K8GvXYZcyZzP8Wo157Hqye6+uhJ9lVXEqtco6V11SV/1BFmzfAkZMXxTlqyI89TgEr4s"
        "d4W8L2zl+Up13ndXUNWu6Bv39zbv/i/MFAXL1blxQgVNxHwbA9RTu/HQFXCGb8FvITBBUHUsS/inFEW1bCEuVAlClS8W"
        "53Pihm5gqb0uqNhCH8vzOckQTRHN31F1voAL2lTmc8o2WsEFFmUDD0VXlOe7i1a3ednCRWnUqIbedO+tAIXNChY69rmB"
        "gCkyztKtbUOmUDDJkPIYO8iNwZcRMtZF3cAphoXEmKIh8womJyhuoAkMCneLTPV5WiBYq4DDLLOqFC1jcz5XQRO4oApO"
        "VDGAcxSWvokwtgsamt9CdNtyUaRLqpZxSXcrr74s5tQ1Mafnv7649nwef6m41BPzayvL+JuT/Wopv7qGf7nS6qJba9hc"
        "ocOx8zYqEveiqf+NXJxhf5lRf5lRf5lRf5lRf+GMmr6TY4Lby6sLBN/8Ma2uE3JISItMZ3tovkucB8737Zj3fYNTZNNy"
        "7NgdvqrIhQUOa8dmX3D7vke73C8ptv81xLkFOPdtp2CHC7ywKWpF7BIUWdQs521qVNb0isXxW7xiOj9ysnb/2ccboWyI"
        "6Oe2xOti8YZh8Dto+lbwVvyBY1/SKqq+g3XR2tHpxxubKS077+6+47zqZG8FbHLNWV9fv0nhu8UtsJzCu+849PtOBG99"
        "oyhrG449fuZM41U8GL2eJFfRdFnYVETuU13vfQKkKpqSY/fdKJiWwQsW/ahECbh8mfqyB3lfz/lsrJuPHDvgUkZewYHr"
        "6w9cTNGKZojFiiAWnew/Onb4fGPgrI+j/xBz1iuPcJ6FK7XjKq9VeIXjq7LJuUxIY/bAS67yBur+1iPnMnUR3uKNHboA"
        "tCkt02KFFqvUnN2n4rPc2MH7gRdcI7GXXMVtt420k7epv5DifpfChZ0R0NUM36hYZe+z1W30oohWWfNCAe1LyVtxum/S"
        "rLcH0lekb0rXpBek70gvSjclCkG0B71Q6BLthUNvh7p6TsYEynTsdG+HTNehz/H5nZIG3PA7C8YHuAjph75Weo02RbsP"
        "IZ+PQell3o77uvNgziZ+whxvRzGlU2XMRIvOu3aQRgueh95/Sh17qKKVjaKIm8iJpRJmYNSaPXiBLropijomKFsibQ1I"
        "ZRPfZ3hFoUfHHdC3KeoWhzvJycWq8w8Y63CL7NkBFbdg3ftyKWuctycugdItO+TtircZ7gdOlb9TNjirzKkyInOoDTxT"
        "IcwyKW2X7WmzUnAfNpyoiCoeVe/xg5bxncTE8ZWCtOMZk37izZZ+eln6Ge0Q7eGijGGEidmnoKyv4x5ThKg4p/+jlni7"
        "H5fO8caGiZZKZUcCO3ZDUW6g4kXafs9d4MvSbdEe6cWjrIlITwUXg3y+IBYqG/7gLB48GSP1q+6+pHkr/Tn/U11bXcUj"
        "So/ptkO5wRy2otAry3LuoQIvuH6dxhxOKWFybuCpfOAUaMT2joZp8RsiRmoYEfsYcKku5nfFgvTPfuM2NkQ8Fwt/ABbF"
        "O9Y="
    ),
    4: (
        "eNrtWV9sG0d6/2ZJkdTqDynqP/XHFHFoaVuUJUr16VT3at/l0It9UXxxDyhSHLbL5VK71u5ys7uUKF/ToxPbUYI9VHX2"
        "UCIPhXpPgvtC5KEV+sT2iQhyqHBPxKEF9HIokSe1T8K9tN/sLkXGURIHdt4iiDPffDPzfb/5zTezM7uV4C//YQ7cPztx"
        "ly8vcKYhLMiaJRq6IWJqLuhlhXfssZ9oSpHPi/lXRFP6QVkUShafU0TnfefifWf9TSdtD2I7TuzU2EFacL73n1MAD0gk"
        "EO/V7xoWJxcM69IEG2SZYCzORPpSoby4JQti1tVk/4D9FptiR9HW2hpturZ2++5r1o/4nWLJiveyYZYhUCHkWdut9d6V"
        "LU6QeFm7Cex/ZNh/nmUfjrIdbTykYrqwlPgvhh0qlEwxzwlFVccxWHJRi6+yYZ03eJVbRPhUoJwkhmN9CQR76QwNA7AG"
        "VeZ+pVJJ/ioIj3sgvtbuufSZnrGne/6QVJm3uvqW2IF80eI2RE00eGVhMR7A4vleE/ExHEvaHcvFK129ysz/khBLSJwg"
        "sIprnGFdgK6nDwLIN4Dn8HEInoQg9WP2PBfseZjj57VMtLlqC0tpZtF1vUoS/82ww5/hd2EJeer1ey0sPSvHiz5P19p9"
        "lxa+AsuL57O89EJYXvRZXnQ9ncfyT56X5Q5fic7w0wGX6cXPZTrbzXT2WZm+/lmms8/O9PXzmc6+EKav+0xfdz19vUxn"
        "O0xn00GX6eufy/RyN9PLz8r07c8yvfzsTN8+n+nlF8L0bZ/p266nr5fp5Q7Ty+kel+nbyPS/hVl/o45/mw2Un2GrCMRJ"
        "2YMf87n5DhvYfoZ9AjtuU1rvd3X9V8L272gah5PtzXDIk74ys6+HN79fMq2iWmUeuvYZ1oXoOvuQIT2/ZV7+WQqfYaLB"
        "5WVV1KgXDhFbMo0tM7X2lz+dT3nOMei0gryRWvtZalPW8qm1FMd1QKbefPN88NkXAf6BD/5hN/jg1w9+6UWAf9sH/6Ab"
        "fOBrAH9IWLajfxHQ3/Khv90NnXnx0FMvP++Kpos0QRdcmrjPwljqz57XJKMv4m8p3btI1vD8FyHxJDvbWT5uLLpz6rLj"
        "Ov0e3OuNkBhJBFgC75EHhJ24Yqn6Ff2q8R3OFAzeEqQrSPSCvsNOXdkuGptXDCujS7wpXr2iG8UN3CrwCLwTj1xTi/mS"
        "In43PqXyllpSvOPjwjWlKPCK+d0Ft5jop84mIslQOrJ4EUtMjJl4PRlLv744mmIiJBVEDXlM4AMC8X/qZV8UJUmSJqvk"
        "rxjjXyKnJFBlyHGAfBIIrhc1sRYkh0FSD5JGEHZDUA3BfghqIdIIkSOUw1APk0aYHIVJMxw8CZPdCKlGYD/yf+0/0ojA"
        "UQSOI3DSpaz0wkEvtHrfqVSiVbaj32dJjSVHLDnog1ofNPpIsw+O+0irj5yg3A+tflIZ6NkdII8HYH+Adj9w0/oAaQ5A"
        "ZRB+Mfjrj+0/3R/E6QseD0JrsG3755Uo1KJwGCX1KBxFSTMaPY5CK0pOonAahUoMdmPwOBYZ6GEigXAvqcbIfox7EoNa"
        "DBqx/V+EmjFoxaAyRHaHYG8IDoagPkSaQ/njIWgNwekQVOKwF4dqHA7isVo8UI9DKw6VYbI7DPvDFebDYTgcjtWHoTkM"
        "vxv+9ccf/0lrGE6Ge6ojyf0RcjjC1kdmGyPQHLn+yQicjMDpCFRGye4oVEe7CBqFg1FSGyWHo1AfhcYoNEfheBRao3Ay"
        "CqejsDsG+2PkydgwOyBIJW2Tw4uYzpXMOJNZejI2xsY8rSnfE7ncjiX6Fdh8Qy+ZnI6bgFbMi552nB3SBEHhijqn8CVN"
        "kM4MjbCDmixwpi7i8WUjp/vqfjZkWJbf6nCMHI2R5hi0xuBkDCrjsDcO++NQG4fDcfLROByN06lrjsPxOLTGyck4/H4c"
        "KhNQmyCHEyP1iXRjApoT0JqA3UmoTsL+JFObhPokNCbJ0SRpTsLxJJxMwukk2U2k9xIj1QQcJODDRCDYE2gkyFECjhPQ"
        "SsBpAipTsD9FDqZIbWp38HAK6lPQmILfTEUJEwyFI71s38BgbCg+fDwFlWnYncb4YT6YDshaYX+aHExDbRoOp6E+TRrT"
        "0JxOHk+T1nQldjJNTrH1DLM3Qw5moDYDhzNQn4HGDGnOkOMZcjIDpzNkb5ZUZ5n9WTiYJbVZOJyF+iw0ZsnRLBzPQmuW"
        "nMyS01ny3gUS2bsABxdI7QLUL5DGBXJ0ASpJ2E3CXpLehKpJ8qskIQdJqCXhMMnUk9BIwlGyEyDNJBwnoZWEky7laZJU"
        "5iq3d+fI3hxU52B/Dg7moDZHDufIv8/B0RxpzsEncyRyMne2XH4/B2+lYDcFeymopuAgBbUUHKagnoKPUpSX36SgmYLj"
        "FGmlurfJ3xJC3mMYQvYY8iEDdWbmIwbiR4QdiPTHKkwilHT3XCwOxCoRLN73i4Ne7UO/GPWKD/xizCu+7ReHvKK7Syew"
        "LoLPCXIzHBmYqESSfYlJhFNhVqlmcKLCJPtQGHKFRAz30AqTplX9niYRCcQqQSxHvaas68yVL+FxbuBSDz4ryBBmTJz0"
        "XwpFAnEmGksz2eMg63jP6Iz/jJ566qDXeVMw0fuESCxu4t6DJjF77t4dD1PPFNT0+dt4T4yOL/VFvUmy74thZc+F9eBL"
        "YZHnghVAWH//RbCWnoK16cJ6+0thBb4U1tz5vdlIhWkj++WnkU1+6uR1Hi4v8r7c8vNN5M33IuxEefUqd3Ulg9u2VtzW"
        "MoqslcqZDa0UD93TtkRjJfG78OWrKznZmr/M58uYiCYmW2U3ybrpHy1lc4Wlq2eybPHKxllpuy0J+baUf6MtFdqCXFD5"
        "tryVU+Vu+czLlnImaVqniV7UBc2iRt2OXg9BKSglUyrqFpW3czS9JxpFzNXiFqaGsEyblSlwobw6fxmHIGBKcRTMDTOH"
        "5yyUyqYxf3mjQN3J2pYuyDgK5R76m7+sqsgCGsthO11Q8OCFuYsFc0MsiEZGK2Y2eEsSjW6NKfCW5akKgoT8GHmdmjXy"
        "huZmJj735i+bvIT0mBJPE9PaxIwiwiTrpstuurKw5OeedoU292q33Lna8qC9Qfkpm/yW6GeCn7sMuZI5n+HVcsZj1ZPd"
        "eXUl+hZBEcteoaC31QV91RNkzfIlZMTwTVmyIs5Tg0uLCNMXsr6wleVL5XnfXU5V26Jv3J/brPvC1xQFy9W5cUIFTcTb"
        "Agaop3bjoS1gD9+CX0JggqDqmBbwp+RFtWghLlQJQpnP5+cz4oZuYKq9IahYQh8r8xnJEE0Rzd9VdT6HA9pU5jPKNlrB"
        "AeZlAxdFW5Tn24NWt3nZwkFp1KiG3nTvToPCZgkTHevcQMCzPfbSrW1DplDwdCRlMXaQG4MvImTM87qBXQwLiTFFQ+YV"
        "PFWhuIEmMCjcKTLVZZogWCuHzSyzrOQtY3M+U0ITOKASdlQxgDMUlr6JMLZzGprfQnTbcl6kQyoXcUj3Sq+9KmbUNTGj"
        "Z7+9uLacxX8qLnXE7NrVFfzPyH62lF1dw1+msLro5hoWr9LmWHkHFfH7vYn/iZx/NfjmKvDNVeCbq8A3V4GvfBWgLxPw"
        "KN65EOQIeUzwPlAl5JCQBplJd9D8kDiPnB/bfd5HPE6RTcux++7yZUXOLXCYOzb7klv3I1rlfi60/U9+zi3Avg+dnB3O"
        "8cKmqOWxSlBkUbOch9SorOkli+O3eMV0fuqk7YGzL5RC0RDRzx2J18X8DcPgd9D0reCt2CPH7tFKqr6Ded7a0ekXSpsp"
        "rDjv7r7jvOakbwVscs1ZX1+/SeG7yS2wnNy77zj0I2YEd30jL2sbjj1+5kzjVVwYnZoJrqTpsrCpiNxTVe9/CqQqmpJj"
        "99/ImZbBCxb9ckoJuHiR+rKjvK/nfDbWzceOHXApI7ex4fr6IxdTb0kzxHxJEPNO+u8cO9xdGDyr4+jrPGe99Bj7WThS"
        "O6byWolXOL4sm5zLhDRmD77iKm+g7s89ci5SF+Et3tihA0Cb0gpNrtJklZqz+1V8lhs7uD/wgmuk7xVXccctI+3kIfUX"
        "UtyPrziwMwLamuEbJavofZu9g14U0SpqXiigfWniVozOm3TBmwPpW9IfS9ekl6QfSC9LNyUKQbSjXii0ifbCoTNDbT0n"
        "4wHKdOxkZ4ZM16HPcfdMSYNu+J0F4yMchPQXvlZ6nRZFux8hd8eg9Cpvx3xdN5izjp8yx9u9eKRTZTyJ5p137SCNFlwP"
        "nfe8jj1U0opGXsRJ5MRCAU9g1JodPUfXuymKOh5QtkRaGpSKJl5peEWhS8dt0L8p6haHM8nJ+bLztxjrcIvs2QEVp2Dd"
        "+zwva5w3Jy6B0i075M2KNxnuV3yVv1s0OKvIqTIic6gNXFMhPGVS2i7aM2Yp5z5sOFERVVyq3uMHLeOdxMT2pZy04xmT"
        "/trrLf3NRenntEK0h/MyhhEezJ6Csr6Oc0wRoqJL/7mWeHsAh87xxoaJlgpFRwK774ai3EDFy7T8vjvAV6U7oj3SiUdZ"
        "E5GeEg4G+XxJzJU2/MZpXHgyRuofuvOS5K3kF7wMXltdxSVKl+m2Q7nBM2xJoVuW5dxHBW5wAzqNOexSwMO5gavykZOj"
        "EdtZGqbFb4gYqWFE7GPAobqY3xVz0j/6hTtYEHFdLPw/R07oUA=="
    ),
    5: (
        "eNrtWl1sI9d1PndIkdTohxQl6of6WYp1W8oraiVKVRR1m+6mDhLvxvLG2wCFi2B2OBxqZjUcjmeGErWpG669u5aNCarK"
        "E0Dwk5onYYsCrF8q9InoE2E4gJAnIUABoWhQwk9Kn4Q8tD13ZijSXtmWYW2fLIj3nnPuved897s/cy+HFf8vii+A82fF"
        "7/PlGc7QhRlZNUVd00VMjRmtrPC2NfhjVSnyOTH3imhI3yuLQsnks4pov29PPbRX3rRTVi/W48RWieWniv3df5oAeERC"
        "vmindl83OTmvmy8Os36W8UeiTKgrGciJ67IgZhxL5o/YF9gkG0Nfy8u06vLynfuvmT/kN4slM9rJBlmGQIWQi9Zb7rwv"
        "m5wg8bJ6C9i9efY/kuw/j7AtazRQwHRmLv7vDNuXLxlijhOKBQ37YMpFNbrEBjVe5wvcLMKnAuUk3h/piiPYF8/QMADL"
        "sMs8rFQqiV/6YacDosvNlnPPtIx8tuUPyC7zVlvbEtuTK5rcqqiKOq/MzEZ9qJ4fNR4dxL6knL5MXWtrVWb+mwRYQqIE"
        "gVUc5wzrAHQifeBDvgHcgDsBeBqA5I/Y80Kw52GOnlcz3uSqKcylmFkn9BKJ/xfD9j/D78wc8tTptZqZuyjHsx5P15tt"
        "52a+Asuz57M8dyksz3oszzqRzmP5x1+X5RZf8Vb3Uz6H6dnPZTrTznTmokzfeJbpzMWZvnE+05lLYfqGx/QNJ9LzZTrT"
        "YjqT8jtM3/hcpufbmZ6/KNN3nmV6/uJM3zmf6flLYfqOx/QdJ9LzZXq+xfR8qsNh+s7nMr3QzvTCRZm+9yzTCxdn+t75"
        "TC9cCtP3PKbvOZGeL9MLLaYXUgGH6XvI9P+EWO+RGP0W6ytfYFP2RUnZhR/xuPk269u4wI6MDTcorQ/bmv4rYbs3VZXD"
        "wXZHOOBKX5nZ14Nrf1EyzGJhl3ni+GdYB6IT7EOGBH7DvPzTJJ4WRJ3LyQVRpVE4RGzKdG4ZyeW//sl00g2Ok07Ny6vJ"
        "5Z8m12Q1l1xOclwLZPLNN88HP38Z4B974J+0g+94/uAzlwH+kQf+cTt4//MHP3cZ4N/2wD9qB+97DuAPCMu27JcB/S0P"
        "+tvt0JnLh558+etuR3SHidPdIkWcI1Mk+f2v65LRZvEzl+qeJctX2akQif4h+wette8sJGdCOgPrUORE/i486AyRCIn7"
        "WALvkUeEHb5mFrRr2qL+bc4QdN4UpGvI9oy2yY5e2yjqa9d0M61JvCEuXtP04ipudnhd2oyGrheKuZIific6WuDNQklx"
        "rxoz15WiwCvGd2YcNd5Ngw2HEoFUaHYKNSbCDL+eiKRen40lmRBJ+tFCdgh8QCD6j53sZfGSICmyRO4x+r+ETolvlyHH"
        "PvKJz79SVMWqnxz4Sc1P6n7YCsBuAPYCUA2QeoAcohyEWpDUg+QwSI6C/pMg2QqR3RDshf63+UfqITgMwXEITtqMlU7Y"
        "74RG5zuVSniXbdn3WFJlySFL9rug2gX1LnLUBcddpNFFTlDuhkY3qfR0bPWQnR7Y66HN95201kOOeqDSCz/v/dXH1p/v"
        "9eLw+Y97odHb9P2zShiqYTgIk1oYDsPkKBw+DkMjTE7CcBqGSgS2IrATCfV0MCFfsJPsRshehHsagWoE6pG9nweOItCI"
        "QKWPbPXBdh/s90Gtjxz15Y77oNEHp31QicJ2FHajsB+NVKO+WhQaUaj0k61+2OuvMB/2w0F/pNYPR/3w2/5fffzxnzX6"
        "4aS/Y3cgsTdADgbY2sBEfQCOBm58MgAnA3A6AJUY2YrBbqyNoBjsx0g1Rg5iUItBPQZHMTiOQSMGJzE4jcHWIOwNkqeD"
        "/WyPIJXUNQ4v7RpXMqJMeu7p4CAbca2G/EDkspum6BVg9VWtZHAa7gRqMSe61iG2TxUEhStqnMKXVEE6czTA9qqywBma"
        "iAew1azmmbvZgG6aXq2DQXI4SI4GoTEIJ4NQGYLtIdgbguoQHAyRj4bgcIgO3dEQHA9BY4icDMHvh6AyDNVhcjA8UBtO"
        "1YfhaBgaw7A1ArsjsDfCVEegNgL1EXI4Qo5G4HgETkbgdIRsxVPb8YHdOOzH4cO4z9/hq8fJYRyO49CIw2kcKqOwN0r2"
        "R0l1dKv3YBRqo1AfhV+PhgnjDwRDnWxXT2+kL9p/PAqVMdgaw/nDfDDmk9X83hjZH4PqGByMQW2M1MfgaCxxPEYaY5XI"
        "yRg5xdrjzPY42R+H6jgcjENtHOrj5GicHI+Tk3E4HSfbE2R3gtmbgP0JUp2AgwmoTUB9ghxOwPEENCbIyQQ5nSDvXSGh"
        "7Suwf4VUr0DtCqlfIYdXoJKArQRsJ+iteTdBfpkgZD8B1QQcJJhaAuoJOEy0JshRAo4T0EjASZvxNEEqk5U7W5NkexJ2"
        "J2FvEvYnoTpJDibJv03C4SQ5moRPJknoZPJsufx+Et5KwlYStpOwm4T9JFSTcJCEWhI+SlJefp2EoyQcJ0kj2b5N/oYQ"
        "8h7DELLNkA8ZqDHjHzEQ/U/C9oTCkQoTDyScjRfVSKQSQvWhp/a5pU88Neqqjz2131UfeeqAq77tqTFXdTbtOPWLzw5y"
        "KxiKDFdCia54EtFVmCVq6RuuMIkuFPqbQswR4hHcWytMitYJu5ahkA8tqEebVQcc4UU8pUZe7MCnCIlhxkRJGDM0RlNM"
        "5ncdrO0+vNPew3v0M8fX1jdNw91PicTixu4+geIT5+7n0SCiGKaAxs7f2jsitJPJL2pNEl1fDGv+XFiPvxQW+VqwfF8G"
        "K3MurEdfCsv3fNmaOxfW2/8PbO18GtbIp46J54F66/lzdeu9EDtcXlrkFhfS+GxRixtqWpHVUjm9qpaigQfquqgvxH8b"
        "vLq4kJXN6at8royJaGCyXnaSjJP+yVwmm59bPJNlk1dWz7SNpiTkmlLujaaUbwpyvsA35fVsQW6Xz6KsK2eSqraqaEVN"
        "UE3q1GnothCUvFIypKJmUnkjS9MHol7EvFBcx1QX5mm1MgUulJemr2IXBEwpjryxamTxMIhS2dCnr67maThZXdcEGXuh"
        "PMB401cLBWQBnWWxniYoeDrE3MGCuS7mRT2tFtOrvCmJervFEHjTdE15QUJ+9JxG3eo5XXUyAx/O01cNXkJ6DImniWGu"
        "YUYRYZJx0nknXZiZ83LXukCru6Xrzlitu9DeoPyUDX5d9DLByx2GHMmYTvOFctpl1ZWdcXUk+mWNIpZdJa81zXltyRVk"
        "1fQkZET3XJmyIk5Th3OzCNMTMp6wnuFL5WkvXLZQaIqec29sM84bDEMUTMfmzBMqqCLea3CCumZnPjQFbOF58DQEJggF"
        "DdM8fpScWCiaiAtNglDmc7nptLiq6ZiqbwgF1DDGwnRa0kVDRPf3CxqfxQ6tKdNpZQO9YAdzso6LoinK081OFzZ42cRO"
        "qdSpitE09/aFwloJEw3LnImAFxBspZkbukyh4BFOyuDcQW50voiQMc9pOjbRTSTGEHWZV/Doh+IqusBJ4QyRUZinCYI1"
        "s1jNNMpKztTXptMldIEdKmHDAk7gNIWlrSGMjayK7tcR3YacE2mXykXs0oPSa6+K6cKymNYy35pdns/gPxXnWmJmeXEB"
        "/9Oyl81llpbxk84vzTq5iuoirY6Fd9EQfdgZ/13o/PvLN/eVb+4r39xXvrmvfOX7Cv3GAy8IrVtLlpAdgpeWXUIOCKmT"
        "8VQLzQ+I/cT+kdXlvpXmFNkwbavrPl9W5OwMh7ltsS85ZT+kRc77b8t7h23fBmz72M5awSwvrIlqDosERRZV035Mncqq"
        "VjI5fp1XDPsndsrqOXvlLhR1EePclXhNzN3UdX4TXd/23448sa0OtVTQNjHPmZsafeVuMfkF+92td+zX7NRtn0Wu2ysr"
        "K7cofCe5Daadffcdm76VD+Gur+dkddW2hs6CqXwBF0arZJgrqZosrCki95mi9z8FsiAakm1138waps4LJv0pACVgaorG"
        "ssK8Z+c8NlaMHdvyOZSRO1hxZeWJg6mzpOpiriSIOTv197YVbFd6z8o4+sWjvVLawXYm9tSKFHi1xCscX5YNzmFCGrR6"
        "X3GMN9H2ly45UzREcJ3XN2kH0Ke0QJNFmixRd1Z3AZ/l+ibuD7zgOOl6xTHcdXSknTym8QKK82sC7NgZAU1L/82SWXR/"
        "bHAXoyiiWVTdqYD+peHbETpu0hV3DKQXpD+VrksvSd+TXpZuSRSCaIXdqdAk2p0OrRFq2jkZD1CGbSVaI2Q4AT2O20dK"
        "6nWm39lkfIKdkP7Ks0qvU1W0uhFy+xyUXuWtiGdrB3PW8FPueKsTj3QFGU+iOftdy09nC66H1jfSttVXUot6TsRB5MR8"
        "Hk9g1JsVPsfWuSaKGh5Q1kWq9UpFA+8zvKLQpeNU6F4TNZPDkeTkXNn+O5zrcJtsW74CDsGK+3sTWeXcMXEIlG5bAXdU"
        "3MFwfpZS4O8Xdc4scgUZkdnUB66pAJ4yKW1T1rhRyjoPG05UxAIuVffxg57xTmJg/VJW2nSdSX/jtpb+dkr6GS0Qrf6c"
        "jNMID2afgbKygmNMEaKhzf65nnirB7vO8fqqgZ7yRVsCq+umotxEw8tUf9/p4KvSXdEaaM1HWRWRnhJ2Bvl8ScyWVr3K"
        "KVx4Ms7UP3bGJcGbiS/4xnp5aQmXKF2mGzblBs+wJYVuWab9EA24wfVodM5hkzweznVclU/sLJ2xraVhmPyqiDM1iIg9"
        "DNhVB/O7Ylb6B0+5i4qI62Lm/wCSspHX"
    ),
    6: (
        "eNrtWl1sG9eVPndIkdTIkihSPxT1Y4pbbGhblCVKVhWtt2t3U7SxG8WNW6DIohgPh0PNWMPhZGYoUe5mSyf+UYJpV3Wm"
        "WCFP2j4J3hciLyvsvhD7JAQpIPRJKFBAL8UKeVL3SejL7pk7Q5Gx6USBpX2KIN17zrn3nvPd7/7MvaOp+H/z41eA/ljx"
        "u3x5gjN0YUJWTVHXdBFTY0IrK7xt9f9EVYp8Tsy9IRrS98qiUDL5rCLaH9kX7tsL79opqwvrcWKjxPI7iv3dJ2MAD0jI"
        "F2nX7uomJ+d182KM9bOMPxxhQh3JQE5clgUxQy2Zv2a/xSbZPvQ1P+9UnZ+/dfct84f8arFkRtrZIMsQqBBy0nrz7Xdl"
        "kxMkXlZvAPvwVfZXr7B/HGEb1kiggOnEVPyPDNuTLxlijhOKBQ37YMpFNTLHBjVe5wvcJMJ3BIeTeDTcEUewF4/RMADz"
        "sMHcr1Qqid/64UkbRObrLaeeaxl+tuUPyAbzXlPbEtuZK5rcoqiKOq9MTEZ8qLaOGo/0Y19StC8XLje1KjP/QwIsIRGC"
        "wCrUOcNSgDTSxz7kG8AN+CQATwOQ/BHbKgTbCnOkVc14nau6MJViJmnoORL/b4aNPsfvxBTy1O61mpg6KceTHk9X622n"
        "Jr4Gy5OtWZ46FZYnPZYnaaRWLP/kZVlu8BVvdD/lo0xPvpDpTDPTmZMyfe15pjMnZ/paa6Yzp8L0NY/pazTS2TKdaTCd"
        "Sfkp09deyPR0M9PTJ2X61vNMT5+c6VutmZ4+FaZveUzfopHOlunpBtPTqTbK9K0XMj3TzPTMSZm+8zzTMydn+k5rpmdO"
        "hek7HtN3aKSzZXqmwfRMKkCZvvNCpq80M33lpExrzzN95eRMa62ZvnIqTGse0xqNdLZMX2kwfSUVpExryPR/sqx3+Ih8"
        "m/WVT/D480VI2YUf9rh5lfWtnODZhw1XHFrvNzX9D8KeW1VVDgfbHeGAK31tZt8OLv19yTCLhQ3mMfXPsBQiDfYJQ4J/"
        "YF7/eRLPZaLO5eSCqDpROERsys7cMpLz//Cz8aQbHCedmpcXk/M/Ty7Jai45n+S4Bsjku++2Bj9zGuAfeeAfN4MPnD34"
        "6dMA/9AD/6gZfNvZg8+cBvgHHviHzeD9Zw9+6jTAv++Bf9AM3ncG4LcJyzbspwH9PQ/6+83QmdOHnnz9ZfdSZ3uMO1td"
        "itCTdTj5/Zd1yWiT+DeV6p4k85PsRIhELrKpxsZFdwG6muispKNLeaLhvwv32kMkTOI+lsCH5AFhY5fNgnZZm9Vf5QxB"
        "501BuoyUT2ir7NDllaK+dFk305rEG+LsZU0vLuJ2jVfr1UjoaqGYKynidyJDBd4slBT3WjpxVSkKvGJ8Z4Kq8XNOsFgo"
        "EUiFJi+gxoSZ2NuJcOrtyb4kEyJJP1rIEwIfE4j8Wzt7WuQkSIrMkTuM/u+hI+LbYMi+j3zu8y8UVbHqJ9t+UvOTHT+s"
        "BWAjAJsBqAbIToDsohyEWpDsBMlukOwF/YdBshYiGyHYDP1v/YfshGA3BPshOGwyVtphqx0O2pH+7g22Yd9kSZUluyzZ"
        "6oBqB+x0kL0O2O8gBx3kEOVzcHCOVDrb1jrJk07Y7HSab9G01kn2OqHSBb/s+t1n1t9tduHw+fe74KCr7vsXlW6odsN2"
        "N6l1w2432evu3u+Gg25y2A1H3VAJw1oYnoRDnW1MyBdsJxthshnmnoahGoad8OYvA3thOAhDpYes9cB6D2z1QK2H7PXk"
        "9nvgoAeOeqASgfUIbERgKxKuRny1CBxEoBIla1HYjFaYT6KwHQ3XorAXhT9Ff/fZZ397EIXDaNtGb2Kzl2z3srXe0Z1e"
        "2Ou99nkvHPbCUS9U+shaH2z0NRHUB1t9pNpHtvug1gc7fbDXB/t9cNAHh31w1Adr/bDZT572R9lOQSqpS5ymixpXMiJM"
        "euppfz8bdq2GfE/ksqum6BVg9UWtZHAabgdqMSe61gG2RxUEhStqnMKXVEE6dtTLdqmywBmaiEfIxazmmc+xAd00vVrb"
        "/WS3n+z1w0E/HPZDZQDWB2BzAKoDsD1APh2A3QFn6PYGYH8ADgbI4QD8ZQAqMajGyHastxZL7cRgLwYHMVgbhI1B2Bxk"
        "qoNQG4SdQbI7SPYGYX8QDgfhaJCsxVPr8d6NOGzF4ZO4z9/m24mT3Tjsx+EgDkdxqAzB5hDZGiLVobWu7SGoDcHOEPx+"
        "qJsw/kAw1M52dHaFeyLR/SGoDMPaMM4f5uNhn6zmN4fJ1jBUh2F7GGrDZGcY9oYT+8PkYLgSPhwmR1h7hFkfIVsjUB2B"
        "7RGojcDOCNkbIfsj5HAEjkbI+ijZGGU2R2FrlFRHYXsUaqOwM0p2R2F/FA5GyeEoORolH54nofXzsHWeVM9D7TzZOU92"
        "z0MlAWsJWE84b1g2EuS3CUK2ElBNwHaCqSVgJwG7icYE2UvAfgIOEnDYZDxKkMpY5dbaGFkfg40x2ByDrTGojpHtMfJf"
        "Y7A7RvbG4PMxEjocO14ufxmD95KwloT1JGwkYSsJ1SRsJ6GWhE+TDi+/T8JeEvaT5CDZvE3+gRDyIcMQss6QTxioMSOf"
        "MhCpMGxnKBKuMPFAgu6+qEbDlRCq9z211y197Kl9rvrIU/td9aGnDrjqA0+Nuer7njroqnQPj4cxDD5PyI1gKBqrhBId"
        "8SSCrTBzjqU3VmESHSj014VBKsTDuNVWmJRTJ+Ja/irkC1f8qPfVqw64AkvDU/kiHsGjF9vwKUMGMWMi+LgJhHwRZiCW"
        "YjK/CrK2+3RPe0/3oWcO5403lrHup0RicdN3H1Hx0ZZ7fSToRHbQDbfe9tvCTo+TX9aaJDq+HNZMS1iPvhIWeSlYvq+C"
        "Nd0S1sOvhOU7W7YyLWE9+H9g61++DNbUM7CWKKz3T4Gtsdat2VCFqSP7zReRDX7hhNsKl7tyv9rzyw3kjQ9DbKw8N8vN"
        "zqTxoagWV9S0IqulcnpRLUUC99RlUZ+J/yl4aXYmK5vjl/hcGRPRwGS5TJMMTa9MZbL5qdljWTZ5ZfFYW6lLQq4u5d6p"
        "S/m6IOcLfF1ezhbkZvk4yrJyLKlqo4pW1ATVdJzShm4LQckrJUMqaqYjr2Sd9J6oFzEvFJcx1YVpp1rZAS6U58YvYRcE"
        "TB0ceWPRyOIpFqWyoY9fWsw74WR1WRNk7IVyD+ONXyoUkAV0lsV6mqDgsRZzigVzXcyLelotphd5UxL1Zosh8KbpmvKC"
        "hPzoOc1xq+d0lWYGnirGLxm8hPQYEu8khrmEmYMIkwxNp2k6MzHl5a51xqnuli7TsVp2ob3j8FM2+GXRywQvpwxRyRhP"
        "84Vy2mXVlem4Usl5T6aIZVfJa3VzXptzBVk1PQkZ0T1XpqyI447DqUmE6QkZT1jO8KXyuBcuWyjURc+5N7YZ+m86QxRM"
        "aqPzxBFUEW9lOEFdM50PdQFbeB48DYEJQkHDNI9/Sk4sFE3EhSZBKPO53HhaXNR0TNV3hAJqGGNmPC3poiGi+7sFjc9i"
        "h5aU8bSygl6wgzlZx0VRF+XxeqcLK7xsYqdUx6mK0TT37ojCUgkTDcvoRMCbE7bSzBVddqDg2VPK4NxBbnS+iJAxz2k6"
        "NtFNJMYQdZlX8MyK4iK6wElBh8goTDsJgjWzWM00ykrO1JfG0yV0gR0qYcMCTuC0A0tbQhgrWRXdLyO6FTknOl0qF7FL"
        "90pvvSmmC/NiWst8e3J+OoO/jjjVEDPzszP4m5a9bCozN49/6fzcJM1VVGed6lh4Gw2R++3xP4daX7y+uWh9c9H65qL1"
        "zUXra1+0nFc1eJVpXLeyhDwheNvaIGSbkB0ykmqg+QGxH9k/sjrcTy84RTZM2+q4y5cVOTvBYW5b7Gu07IdOEf3Iw/I+"
        "1LBvArZ9aGetYJYXlkQ1h0WCIouqaT90nMqqVjI5fplXDPtndsrqPP6uRCjqIsa5LfGamLuu6/wqur7pvxl+ZFttaqmg"
        "rWKeM1c157sSi8nP2B+sPbbfslM3fRa5ai8sLNxw4NPkJph29oPHtvPpSQh3fT0nq4u2NXAcTOULuDAaJTGupGqysKSI"
        "3DNFH30BZEE0JNs6dz1rmDovmM73Lg4BFy44saxu3rNzHhsLxhPb8lHKyC2suLDwiGJqL6m6mCsJYs5O/dq2gs1K13EZ"
        "57w2tRdKT7CdiT21wgVeLfEKx5dlg6NMSP1W1xvUeB1tP3bJueCECC7z+qrTAfQpzTjJrJPMOe6scwV8luuruD/wAnXS"
        "8QY13KY60k4eOvECCv1kBjt2TEDdEr1eMovuFzW3MYoimkXVnQroX4rdDDvjJp13x0D6lvQ30lXpNel70uvSDcmBIFrd"
        "7lSoE+1Oh8YI1e2cjAcow7YSjREyaECP4+aRkrro9DuejI+wE9JPPav0tqOK1jmE3DwHpTd5K+zZmsEcN/yCO95qxyNd"
        "QcaTaM7+wPI7swXXQ+N9um31lNSinhNxEDkxn8cTmOPN6m5ha18SRQ0PKMuio3VJRQOvNLyiOEuHVji3JGomhyPJybmy"
        "/c841+EmWbd8BRyCBfejKlnl3DGhBEo3rYA7Ku5g0G+vCvzdos6ZRa4gIzLb8YFrKoCnTIe2C9aIUcrShw0nKmIBl6r7"
        "+EHPeCcxsH4pK626zqR/dFtL/3RB+oVTIFrRnIzTCA9mz0BZWMAxdhCiocn+Qk+81Yld53h90UBP+aItgdVxXVGuo+F1"
        "R/+IdvBN6bZo9Tbmo6yKSE8JO4N8viZmS4te5RQuPBln6it0XBK8mfiSV+3zc3O4RJ1lumI73OAZtqQ4W5Zp30cDbnCd"
        "mjPnsEkeD+c6rspHdtaZsY2lYZj8oogzNYiIPQzYVYr5AzEr/aun3EZFxHUx8X+TMT3z"
    ),
}


def predict_bytes_accessed(program: str, x: jax.ShapeDtypeStruct) -> int:
    """Predict the compiled `bytes accessed` of BYTES_BANK[program], from x's shape and dtype.

    BYTES_BANK (katas/phase6/programs.py) maps a name to (function, what it takes besides x:
    y, an array like x, or b, a vector of x's dtype with one element per column of x; the dtypes
    x may have). x (a jax.ShapeDtypeStruct: .shape, .dtype) is a matrix whose every dimension is
    one of BYTES_DIMS. Return what `cost_analysis()["bytes accessed"]` of the program compiled
    for those arguments will say. Work from what a fused kernel reads and writes, what each
    dtype costs per element, and which programs need more than one kernel. The tests compile
    the program themselves; your function must not.
    """
    # TODO: which arrays does each kernel read and write, at how many bytes an element?
    raise NotImplementedError("phase6 task 8: predict_bytes_accessed")
