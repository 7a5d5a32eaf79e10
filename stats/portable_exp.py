"""One float64 ``exp`` with the same bits everywhere, for the online-Elo bootstrap.

``np.exp`` is not the same function on every machine: numpy picks an implementation by CPU
(the C library's on plain x86-64, its own AVX-512 one where available), and they differ in the
last bit now and then. The online-Elo bootstrap is defined with this function instead, so that
the plain-numpy reference (``ratings.bootstrap_online_elo_reference``) and the compiled kernels
(``elo_bootstrap``) compute the same bits on any machine.

The algorithm is glibc's exp (Szabolcs Nagy's: a 128-entry table of 2^(k/128), a degree-5
polynomial; ``sysdeps/ieee754/dbl-64/e_exp.c``) in its generic form, without fused
multiply-adds: every step is one IEEE operation, so numpy (array operations) and numba (scalar
code, compiled without fast-math) round identically. Its error is within about half an ulp of
the true value, like the library's. Outside ``|x| < 512`` (a rating gap of 88,000 Elo points)
it is defined as ``inf`` above and ``0`` below; NaN stays NaN.
"""
from __future__ import annotations

import struct
from decimal import Decimal, localcontext

import numpy as np

EXP_TABLE_BITS = 7
EXP_N = 1 << EXP_TABLE_BITS
# glibc sysdeps/ieee754/dbl-64/e_exp_data.c
INV_LN2_N = float.fromhex("0x1.71547652b82fep0") * EXP_N
NEG_LN2_HI_N = float.fromhex("-0x1.62e42fefa0000p-8")
NEG_LN2_LO_N = float.fromhex("-0x1.cf79abc9e3b3ap-47")
SHIFT = float.fromhex("0x1.8p52")
C2 = float.fromhex("0x1.ffffffffffdbdp-2")
C3 = float.fromhex("0x1.555555555543cp-3")
C4 = float.fromhex("0x1.55555cf172b91p-5")
C5 = float.fromhex("0x1.1111167a4d017p-7")
EXP_LIMIT = 512.0


def exp_table() -> np.ndarray:
    """glibc's ``__exp_data.tab``: 2^(k/N) = H_k (1 + T_k); entries T_k bits, H_k bits - (k << 45).

    Computed here to 60 significant digits and rounded to nearest, which reproduces the library's
    table entry for entry.
    """
    table = np.empty(2 * EXP_N, dtype=np.uint64)
    with localcontext() as context:
        context.prec = 60
        ln2 = Decimal(2).ln()
        for k in range(EXP_N):
            exact = (ln2 * k / EXP_N).exp()
            high = float(exact)
            tail = float((exact - Decimal(high)) / Decimal(high))
            table[2 * k] = struct.unpack("<Q", struct.pack("<d", tail))[0]
            table[2 * k + 1] = struct.unpack("<Q", struct.pack("<d", high))[0] - (k << (52 - EXP_TABLE_BITS))
    return table


EXP_TAB = exp_table()
_TAIL = EXP_TAB[0::2].view(np.float64)
_SCALE_BITS = EXP_TAB[1::2]


def portable_exp(x: np.ndarray) -> np.ndarray:
    """``exp`` of a float64 array by the algorithm above, in numpy operations (a new array)."""
    x = np.asarray(x, dtype=np.float64)
    with np.errstate(invalid="ignore", over="ignore"):  # NaN/inf arguments pass through the table path
        return _portable_exp(x)


def _portable_exp(x: np.ndarray) -> np.ndarray:
    kd = x * INV_LN2_N
    kd += SHIFT
    ki = kd.view(np.uint64).copy()
    kd -= SHIFT
    r = kd * NEG_LN2_HI_N
    r += x  # x + kd * hi, then + kd * lo, in the C expression's order
    r += kd * NEG_LN2_LO_N
    slot = ki & np.uint64(EXP_N - 1)
    scale = (_SCALE_BITS[slot] + (ki << np.uint64(52 - EXP_TABLE_BITS))).view(np.float64)
    r2 = r * r
    tmp = _TAIL[slot] + r
    low = r * C3
    low += C2
    low *= r2
    tmp += low
    high = r * C5
    high += C4
    high *= r2 * r2
    tmp += high
    tmp *= scale
    tmp += scale
    outside = ~(np.abs(x) < EXP_LIMIT) & ~np.isnan(x)
    if outside.any():
        tmp[outside] = np.where(x[outside] > 0, np.inf, 0.0)
    return tmp
