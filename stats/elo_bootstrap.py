"""Compiled online-Elo bootstrap: the numbers of :func:`ratings.bootstrap_online_elo_reference`, fast.

The reference advances all bootstrap rounds together, one battle step at a time, with a handful of
numpy calls per step; at 1M battles x 1000 rounds that is 10^9 Elo updates and a million Python
iterations. This module does the same arithmetic in numba-compiled loops on every core, and
returns bit-for-bit the same ratings. Three things make that possible:

* **The same resampling.** The reference draws ``rng.integers(0, n, size=(steps, rounds))`` from
  ``numpy.random.default_rng(seed)``. For ``n < 2^32`` numpy takes 32-bit words from PCG64 (each
  64-bit output gives its low half, then its high half) and maps each word ``w`` to
  ``(w * n) >> 32``, rejecting it when ``(w * n) mod 2^32 < 2^32 mod n`` (Lemire's method). A
  rejection depends only on the word itself, so the stream of indices is the raw stream with the
  rejected words left out, whatever the block sizes. :func:`_draw_cells` runs PCG64 itself (the
  128-bit LCG on 64-bit halves, the XSL-RR output) fused with the Lemire map and the cell
  look-up; every stretch of the stream starts from a state that numpy's own PCG64 reached by
  ``advance``, so each thread draws its own stretches, two at a time to overlap their state
  chains.
* **The same float operations, in the same order**: ``x = u_b - u_a``, ``exp(x)``, ``+ 1``,
  ``-K' / (.)``, ``+ K' S_a``, ``u_a + d``, ``u_b - d`` (see the reference).
* **The same exp**: ``portable_exp`` (glibc's table-driven algorithm without fused multiply-adds,
  one IEEE operation per step), which the reference computes with numpy array operations and
  :func:`_exp` with the same scalar operations, compiled without fast-math. Before the first use,
  :func:`exp_matches_numpy` compares the two on a fixed sample of 400,000 arguments (every table
  slot, tiny, huge and boundary values); should they differ in a single bit, ratings fall back to
  the reference.

Work is split between threads by rounds for rating and by stretches of the stream for drawing;
each thread draws its share of the next block of draws and then rates its rounds of the current
one, so both stay busy. :func:`_elo_block` advances 128 rounds at a time: a scalar loop writes
back each round's two new ratings of the previous step and gathers the next two, and a loop
that LLVM vectorises computes the updates (the exp, the division) over those rounds. Boards of
up to 8 models (the common case) are rated instead by :func:`elo_vector.elo_block`, whose battle
step is explicit vector code that keeps the ratings in vector registers through a block's steps;
it rates bit-coded cells, which the draws look up in place of the plain ones.

No Django here: numpy, numba and llvmlite only.
"""
from __future__ import annotations

import math
import os
from concurrent.futures import ThreadPoolExecutor
from functools import lru_cache

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic

from . import elo_vector
from .portable_exp import (
    C2, C3, C4, C5, EXP_LIMIT, EXP_N, EXP_TAB, EXP_TABLE_BITS, INV_LN2_N, NEG_LN2_HI_N, NEG_LN2_LO_N, SHIFT,
    portable_exp,
)

# ------------------------------------------------------------------------------------ exp

# The constants and table of the portable exp; a module global table is frozen into the compiled
# code as a constant, which is also what lets LLVM vectorise the look-ups (a constant cannot alias
# the arrays a loop writes).
_EXP_TAB = EXP_TAB
_EXP_TABLE_LIMIT = EXP_LIMIT


@intrinsic
def _bits(typingctx, x):
    def codegen(context, builder, sig, args):
        return builder.bitcast(args[0], ir.IntType(64))

    return types.uint64(types.float64), codegen


@intrinsic
def _double(typingctx, x):
    def codegen(context, builder, sig, args):
        return builder.bitcast(args[0], ir.DoubleType())

    return types.float64(types.uint64), codegen


@njit(inline="always", cache=True)
def _exp(x):
    """``portable_exp`` for |x| < 512 (the table path): the same IEEE operations in the same order."""
    kd = x * INV_LN2_N + SHIFT
    ki = _bits(kd)
    kd -= SHIFT
    r = x + kd * NEG_LN2_HI_N + kd * NEG_LN2_LO_N
    index = (ki & np.uint64(EXP_N - 1)) * np.uint64(2)
    tail = _double(_EXP_TAB[index])
    scale = _double(_EXP_TAB[index + np.uint64(1)] + (ki << np.uint64(52 - EXP_TABLE_BITS)))
    r2 = r * r
    tmp = tail + r + r2 * (C2 + r * C3) + r2 * r2 * (C4 + r * C5)
    return scale + scale * tmp


@njit(inline="always", cache=True)
def _exp_outside(x):
    """``portable_exp`` beyond the table path: inf above, 0 below, NaN for NaN."""
    if x != x:
        return x
    return math.inf if x > 0 else 0.0


@njit(nogil=True, cache=True, boundscheck=False, error_model="numpy")
def _exp_array(x, out):
    for i in range(x.shape[0]):
        value = x[i]
        out[i] = _exp(value) if abs(value) < _EXP_TABLE_LIMIT else _exp_outside(value)


def _exp_sample() -> np.ndarray:
    """Arguments that exercise every table slot, both ends of the reduction interval, zeros,
    tiny values, the table limit and overflow/underflow."""
    rng = np.random.default_rng(20231118)
    parts = [
        rng.normal(0.0, scale, 40_000) for scale in (1e-12, 1e-6, 1e-3, 0.05, 0.5, 2.0, 10.0, 100.0)
    ]
    step = math.log(2.0) / EXP_N
    centres = np.arange(-2000, 2000) * step
    parts += [centres, centres + step / 2, centres - step / 2, np.nextafter(centres + step / 2, 0.0)]
    parts += [rng.uniform(-745.0, 709.0, 20_000), np.array([0.0, -0.0, 5e-324, -5e-324, 511.9, -511.9, 512.0, 700.0, -740.0])]
    return np.concatenate(parts)


@lru_cache(maxsize=1)
def exp_matches_numpy() -> bool:
    """Whether the compiled exp equals the numpy ``portable_exp`` bit for bit (checked once; a
    compiler that contracted or reordered the operations would fail it)."""
    sample = _exp_sample()
    ours = np.empty_like(sample)
    _exp_array(sample, ours)
    return bool(np.array_equal(ours.view(np.uint64), _portable_exp_bits(sample)))


def _portable_exp_bits(sample: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore", under="ignore", invalid="ignore"):
        return portable_exp(sample).view(np.uint64)


@lru_cache(maxsize=1)
def vector_kernel_ready() -> bool:
    """Whether the vector kernel of :mod:`elo_vector` compiles here and its exp equals the numpy
    ``portable_exp`` bit for bit (checked once). Where it does not, boards of any size are rated
    by the general kernel."""
    sample = _exp_sample()
    try:
        ours = elo_vector.exp_array(sample)
    except Exception:  # an LLVM or numba that cannot build its IR: the general kernel remains
        return False
    return bool(np.array_equal(ours.view(np.uint64), _portable_exp_bits(sample)))


# ------------------------------------------------------------------------------ resampling

_MASK64 = (1 << 64) - 1
# PCG64's 128-bit LCG multiplier (numpy's pcg64.h), in 64-bit halves.
_PCG_MULT = 0x2360ED051FC65DA44385DF649FCCF645
_PCG_MULT_HI = np.uint64(_PCG_MULT >> 64)
_PCG_MULT_LO = np.uint64(_PCG_MULT & _MASK64)
_U0, _U1, _U16, _U32, _U58, _U63, _U64 = (np.uint64(v) for v in (0, 1, 16, 32, 58, 63, 64))
_LOW32 = np.uint64(0xFFFFFFFF)
_LOW16 = np.uint64(0xFFFF)


@intrinsic
def _mul_wide(typingctx, a, b):
    """The 128-bit product of two uint64 as (high, low) halves (one ``mul`` on x86-64)."""
    def codegen(context, builder, sig, args):
        wide = ir.IntType(128)
        product = builder.mul(builder.zext(args[0], wide), builder.zext(args[1], wide))
        high = builder.trunc(builder.lshr(product, ir.Constant(wide, 64)), ir.IntType(64))
        low = builder.trunc(product, ir.IntType(64))
        return context.make_tuple(builder, sig.return_type, [high, low])

    return types.UniTuple(types.uint64, 2)(types.uint64, types.uint64), codegen


@njit(inline="always", cache=True)
def _pcg_step(hi, lo, inc_hi, inc_lo):
    """state = state * MULT + inc (mod 2^128), on (high, low) halves."""
    high, product_lo = _mul_wide(lo, _PCG_MULT_LO)
    product_hi = high + lo * _PCG_MULT_HI + hi * _PCG_MULT_LO
    lo = product_lo + inc_lo
    hi = product_hi + inc_hi + (_U1 if lo < product_lo else _U0)
    return hi, lo


@njit(inline="always", cache=True)
def _pcg_output(hi, lo):
    """PCG64's XSL-RR output of a state: (hi ^ lo) rotated right by hi >> 58."""
    value = hi ^ lo
    rotation = hi >> _U58
    return (value >> rotation) | (value << ((_U64 - rotation) & _U63))


@intrinsic
def _prefetch(typingctx, array, index):
    """A hint to bring ``array[index]`` into the cache (no effect on results)."""
    def codegen(context, builder, sig, args):
        data = context.make_array(sig.args[0])(context, builder, args[0]).data
        address = builder.bitcast(builder.gep(data, [args[1]]), ir.PointerType(ir.IntType(8)))
        prefetch = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(ir.VoidType(), [ir.PointerType(ir.IntType(8)), ir.IntType(32),
                                                            ir.IntType(32), ir.IntType(32)]), "llvm.prefetch.p0i8")
        builder.call(prefetch, [address, ir.Constant(ir.IntType(32), 0), ir.Constant(ir.IntType(32), 3),
                                ir.Constant(ir.IntType(32), 1)])
        return context.get_dummy_value()

    return types.void(array, index), codegen


# 64-bit words per stretch mapped to battles before their cells are looked up: far enough ahead for
# the prefetches to arrive (32: 1.04 ns per draw, 64: 1.08, 256: 1.13; looked up at once: 1.35).
_CHUNK_WORDS = 32


@njit(nogil=True, cache=True, boundscheck=False, error_model="numpy")
def _draw_cells(states, inc_hi, inc_lo, words, n, threshold, cell_of_battle, out, start0, start1):
    """Two stretches of the PCG64 stream side by side (their two state chains overlap in the
    core): ``words`` 64-bit outputs from each of the states ``states[0:2]`` and ``states[2:4]``
    (high, low), each 32-bit half (low first) Lemire-mapped to a battle in [0, n), rejected words
    dropped; the drawn battles' cells go to ``out[start0:]`` and ``out[start1:]``. Returns the two
    counts.

    A chunk of words is mapped to battles first, prefetching each battle's cell, and the cells are
    looked up after the chunk: the battle table (1 MB at 1M battles) does not stay in the core's
    cache beside the drawn blocks, and the prefetches overlap those misses with the next draws."""
    n64 = np.uint64(n)
    hi0, lo0, hi1, lo1 = states[0], states[1], states[2], states[3]
    w0 = np.uint64(start0)
    w1 = np.uint64(start1)
    drawn = np.empty(4 * _CHUNK_WORDS, dtype=np.uint64)
    done = 0
    while done < words:
        chunk = min(_CHUNK_WORDS, words - done)
        for i in range(chunk):
            hi0, lo0 = _pcg_step(hi0, lo0, inc_hi, inc_lo)
            hi1, lo1 = _pcg_step(hi1, lo1, inc_hi, inc_lo)
            raw0 = _pcg_output(hi0, lo0)
            raw1 = _pcg_output(hi1, lo1)
            p0 = (raw0 & _LOW32) * n64
            p1 = (raw0 >> _U32) * n64
            p2 = (raw1 & _LOW32) * n64
            p3 = (raw1 >> _U32) * n64
            _prefetch(cell_of_battle, p0 >> _U32)
            _prefetch(cell_of_battle, p1 >> _U32)
            _prefetch(cell_of_battle, p2 >> _U32)
            _prefetch(cell_of_battle, p3 >> _U32)
            drawn[4 * i] = p0
            drawn[4 * i + 1] = p1
            drawn[4 * i + 2] = p2
            drawn[4 * i + 3] = p3
        # Every candidate is written; the position moves on only if it is accepted (no branch).
        for i in range(chunk):
            product = drawn[4 * i]
            out[w0] = cell_of_battle[product >> _U32]
            w0 += np.uint64((product & _LOW32) >= threshold)
            product = drawn[4 * i + 1]
            out[w0] = cell_of_battle[product >> _U32]
            w0 += np.uint64((product & _LOW32) >= threshold)
            product = drawn[4 * i + 2]
            out[w1] = cell_of_battle[product >> _U32]
            w1 += np.uint64((product & _LOW32) >= threshold)
            product = drawn[4 * i + 3]
            out[w1] = cell_of_battle[product >> _U32]
            w1 += np.uint64((product & _LOW32) >= threshold)
        done += chunk
    return w0 - np.uint64(start0), w1 - np.uint64(start1)


def _halves(value: int) -> tuple[np.uint64, np.uint64]:
    return np.uint64(value >> 64), np.uint64(value & _MASK64)


class _Block:
    """One block of draws, ``count`` of them in order: the cells kept over from the block before,
    then one region per stretch of the stream (each holds its accepted draws). The logical
    sequence is the segments ``buffer[physical[j]:physical[j] + length[j]]`` one after another."""

    def __init__(self, stream: "_DrawStream", count: int, buffer: np.ndarray, kept: np.ndarray,
                 states: list[np.ndarray], words: int):
        self.stream, self.count, self.buffer, self.states, self.words = stream, count, buffer, states, words
        stretches = 2 * len(states)
        self.physical = np.array([0] + [kept.shape[0] + 2 * words * j for j in range(stretches)], dtype=np.int64)
        self.length = np.zeros(stretches + 1, dtype=np.int64)
        self.length[0] = kept.shape[0]
        buffer[:kept.shape[0]] = kept

    def generate(self, part: int) -> None:
        """Draw the stretches of generator pair ``part`` (called from worker threads)."""
        if part >= len(self.states) or not self.words:
            return
        s = self.stream
        first = 1 + 2 * part
        self.length[first], self.length[first + 1] = _draw_cells(
            self.states[part], s.inc_hi, s.inc_lo, self.words, s.n, s.threshold, s.cell_of_battle, self.buffer,
            self.physical[first], self.physical[first + 1])

    def finish(self) -> None:
        """Top up after more rejections than spare words (rare), and keep the draws beyond
        ``count`` for the next block."""
        s = self.stream
        while int(self.length.sum()) < self.count:
            extra = int(math.ceil((self.count - int(self.length.sum())) / (4.0 * s.accept))) + 4
            end = int((self.physical + self.length).max())
            grown = np.empty(end + 4 * extra, dtype=self.buffer.dtype)
            grown[:end] = self.buffer[:end]
            self.buffer = grown
            states = np.array([*_halves(s.state_at(0)), *_halves(s.state_at(extra))], dtype=np.uint64)
            s.bitgen.advance(2 * extra)
            counts = _draw_cells(states, s.inc_hi, s.inc_lo, extra, s.n, s.threshold, s.cell_of_battle, self.buffer,
                                 end, end + 2 * extra)
            self.physical = np.append(self.physical, [end, end + 2 * extra])
            self.length = np.append(self.length, counts)
        # (A block taken wholly from kept draws leaves the rest of them pending.)
        s.pending = np.concatenate([self.logical(self.count, int(self.length.sum())), s.pending])

    def logical(self, start: int, stop: int) -> np.ndarray:
        """A copy of the draws at logical positions [start, stop)."""
        bounds = np.concatenate([[0], np.cumsum(self.length)])
        pieces = []
        for j in range(self.length.shape[0]):
            lo, hi = max(start, bounds[j]), min(stop, bounds[j + 1])
            if lo < hi:
                offset = self.physical[j] - bounds[j]
                pieces.append(self.buffer[offset + lo:offset + hi])
        return np.concatenate(pieces) if pieces else np.empty(0, dtype=self.buffer.dtype)


class _DrawStream:
    """The cells of the battles ``rng.integers(0, n, ...)`` draws, in order, block after block.

    Each block's raw words are split into ``2 * pairs`` stretches of the PCG64 stream, each
    started from numpy's own state moved there by ``advance``; a block takes ``count`` draws and
    keeps the rest for the next one. Two buffers are used in turn, so that one block can be
    drawn while the one before is being rated.
    """

    def __init__(self, seed: int, n: int, cell_of_battle: np.ndarray, pairs: int):
        self.bitgen = np.random.PCG64(seed)
        self.inc_hi, self.inc_lo = _halves(self.bitgen.state["state"]["inc"])
        self.n = n
        self.threshold = np.uint64((1 << 32) % n)
        self.accept = 1.0 - float((1 << 32) % n) / 2.0**32
        self.cell_of_battle = cell_of_battle
        self.pairs = pairs
        self.pending = np.empty(0, dtype=cell_of_battle.dtype)
        self.buffers = [np.empty(0, dtype=cell_of_battle.dtype)] * 2
        self.turn = 0
        self._probe = np.random.PCG64(0)

    def state_at(self, offset: int) -> int:
        """The 128-bit LCG state ``offset`` words ahead of the stream's position."""
        self._probe.state = self.bitgen.state
        if offset:
            self._probe.advance(offset)
        return self._probe.state["state"]["state"]

    def block(self, count: int) -> _Block:
        kept = self.pending[:count]
        self.pending = self.pending[count:]
        needed = count - kept.shape[0]
        if self.n == 1:  # numpy draws nothing for a range of one value: every index is 0
            kept = np.concatenate([kept, np.full(needed, self.cell_of_battle[0], dtype=kept.dtype)])
            needed = 0
        # 64-bit words per stretch: two candidates each, a few spare for rejections.
        stretches = 2 * self.pairs
        words = int(math.ceil(needed / (2.0 * stretches * self.accept))) + 2 if needed else 0
        capacity = kept.shape[0] + 2 * stretches * words
        self.turn ^= 1
        if self.buffers[self.turn].shape[0] < capacity:
            self.buffers[self.turn] = np.empty(int(capacity * 1.05) + 64, dtype=self.cell_of_battle.dtype)
        states = []
        if words:
            starts = [self.state_at(words * j) for j in range(stretches)]
            states = [np.array([*_halves(starts[2 * p]), *_halves(starts[2 * p + 1])], dtype=np.uint64)
                      for p in range(self.pairs)]
            self.bitgen.advance(stretches * words)
        return _Block(self, count, self.buffers[self.turn], kept, states, words)


# ------------------------------------------------------------------------------------ Elo

# Rounds a kernel advances together: their ratings (models x 8 bytes each) stay in L1.
_LANES = 128


@njit(nogil=True, cache=True, boundscheck=False, error_model="numpy")
def _elo_block(buffer, physical, length, steps, rounds, first, last, n_models, ab_of_cell, score_of_cell,
               k_unit, u, seen, track):
    """Rounds ``first..last-1`` through the ``steps`` battle steps of a block; ``u`` and ``seen``
    are (rounds x models) flat. Returns whether every model of these rounds has been seen.

    The part's cells are first copied out of the block's segments, step by step. Then, for
    ``_LANES`` rounds at a time and step by step: a scalar loop writes back the previous step's
    two new ratings of each round and gathers the next two (``u_a``, ``u_b``), and a vectorised
    loop computes the new ratings in the reference's float operations. Indices are unsigned
    (numba adds no negative-index wrap-around for them).
    """
    width = last - first
    cells = np.empty(steps * width, dtype=buffer.dtype)
    elo_vector.part_cells(buffer, physical, length, steps, rounds, first, width, width, cells)

    m = np.uint64(n_models)
    if track:
        for step in range(steps):
            lane = np.uint64(first) * m
            for i in range(width):
                ab = np.uint64(ab_of_cell[cells[step * width + i]])
                seen[lane + (ab & _LOW16)] = True
                seen[lane + (ab >> _U16)] = True
                lane += m

    lanes = min(_LANES, width)
    u_a = np.empty(lanes)
    u_b = np.empty(lanes)
    score = np.empty(lanes)
    new_a = np.empty(lanes)
    new_b = np.empty(lanes)
    where = np.empty(lanes, dtype=np.uint64)  # flat positions of a (low half) and b (high half)
    for group in range(0, width, lanes):
        count = min(lanes, width - group)
        base = np.uint64(first + group) * m
        for i in range(count):  # nothing to write back before the first step: a no-op write
            where[i] = (base + np.uint64(i) * m) * (_U1 + (_U1 << _U32))
            new_a[i] = new_b[i] = u[base + np.uint64(i) * m]
        for step in range(steps):
            row = np.uint64(step * width + group)
            lane = base
            for ii in range(count):
                i = np.uint64(ii)
                w = where[i]
                u[w & _LOW32] = new_a[i]
                u[w >> _U32] = new_b[i]
                cell = cells[row + i]
                ab = np.uint64(ab_of_cell[cell])
                a = lane + (ab & _LOW16)
                b = lane + (ab >> _U16)
                u_a[i] = u[a]
                u_b[i] = u[b]
                score[i] = score_of_cell[cell]
                where[i] = a | (b << _U32)
                lane += m
            outside = False
            for i in range(count):
                x = u_b[i] - u_a[i]
                outside |= not (abs(x) < _EXP_TABLE_LIMIT)
                d = -k_unit / (_exp(x) + 1.0) + score[i]
                new_a[i] = u_a[i] + d
                new_b[i] = u_b[i] - d
            if outside:  # never with real ratings (a gap of 88,000 Elo points), but exact all the same
                for i in range(count):
                    x = u_b[i] - u_a[i]
                    if not (abs(x) < _EXP_TABLE_LIMIT):
                        d = -k_unit / (_exp_outside(x) + 1.0) + score[i]
                        new_a[i] = u_a[i] + d
                        new_b[i] = u_b[i] - d
        for ii in range(count):
            i = np.uint64(ii)
            w = where[i]
            u[w & _LOW32] = new_a[i]
            u[w >> _U32] = new_b[i]

    all_seen = True
    for j in range(np.uint64(first) * m, np.uint64(last) * m):
        all_seen &= seen[j]
    return all_seen


def default_threads() -> int:
    return max(1, min(len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1, 8))


# Draws per block (steps x rounds): about 4 MB of uint8 cells in flight. Each block costs the
# threads a hand-over and the kernels a set-up, so fewer, larger blocks measured faster at 1M
# battles (2^20: 2.05 s, 2^21: 1.90 s, 2^22: 1.82 s, 2^23: 1.81 s).
_BLOCK_DRAWS = 1 << 22


def bootstrap_online_elo_compiled(
    cell_of_battle: np.ndarray,
    n_models: int,
    rounds: int,
    seed: int,
    *,
    k_unit: float,
    score_of_cell: np.ndarray,
    threads: int | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """``(u, seen)`` of every round, shape (rounds, models): ratings in log-odds units and whether
    the model was drawn. Same arguments and results as the reference's inner loop."""
    n = int(cell_of_battle.shape[0])
    if not 1 <= n < 2**31:
        raise ValueError("the compiled bootstrap handles 1 to 2^31 - 1 battles")
    threads = threads or default_threads()
    m = int(n_models)
    if m >= 1 << 16:
        raise ValueError("the compiled bootstrap handles fewer than 65,536 models")
    # Integer-encoded battles in the narrowest type: with up to 9 models the cells fit a byte, so
    # the table the draws look up (one random access per draw) is a quarter of the int32 one.
    # Up to 8 models, the vector kernel of elo_vector rates bit-coded cells.
    # (It computes each battle's score as (outcome * 0.5) * K', the scores ratings.py passes.)
    score_of_cell = np.ascontiguousarray(score_of_cell, dtype=np.float64)
    outcome_scores = (np.arange(m * m * 3) % 3) * 0.5 * k_unit
    few_models = (m <= elo_vector.MAX_MODELS and vector_kernel_ready()
                  and np.array_equal(score_of_cell.view(np.uint64), outcome_scores.view(np.uint64)))
    if few_models:
        cells_table = elo_vector.bit_cells(m)[cell_of_battle]
    else:
        cell_type = np.uint8 if m * m * 3 <= 256 else np.uint16 if m * m * 3 <= 65536 else np.int32
        cells_table = np.ascontiguousarray(cell_of_battle, dtype=cell_type)
    cell_ids = np.arange(m * m * 3)
    # model_a in the low 16 bits, model_b in the high ones: one look-up per draw.
    ab_of_cell = (cell_ids // (3 * m) + (((cell_ids // 3) % m) << 16)).astype(np.uint32)
    u = np.zeros(rounds * m)
    seen = np.zeros(rounds * m, dtype=np.bool_)
    parts = min(threads, rounds)
    bounds = np.linspace(0, rounds, parts + 1).astype(np.int64)
    tracking = [True] * parts  # until every model has been drawn in every round of the part
    steps_per_block = max(1, _BLOCK_DRAWS // rounds)
    starts = list(range(0, n, steps_per_block))
    stream = _DrawStream(seed, n, cells_table, threads)

    def rate(block: _Block, part: int, steps: int) -> None:
        if few_models:
            all_seen = elo_vector.elo_block(block.buffer, block.physical, block.length, steps, rounds, bounds[part],
                                            bounds[part + 1], m, k_unit, u, seen, tracking[part])
        else:
            all_seen = _elo_block(block.buffer, block.physical, block.length, steps, rounds, bounds[part],
                                  bounds[part + 1], m, ab_of_cell, score_of_cell, k_unit, u, seen, tracking[part])
        tracking[part] = not all_seen

    with ThreadPoolExecutor(max_workers=threads) as pool:
        current = stream.block(min(steps_per_block, n) * rounds)
        list(pool.map(current.generate, range(threads)))
        current.finish()
        for index, start in enumerate(starts):
            steps = min(steps_per_block, n - start)
            following = None
            if index + 1 < len(starts):
                following = stream.block(min(steps_per_block, n - starts[index + 1]) * rounds)

            def work(part: int) -> None:
                # Each thread draws its share of the next block, then rates its rounds of this one.
                if following is not None:
                    following.generate(part)
                if part < parts:
                    rate(current, part, steps)

            list(pool.map(work, range(threads)))
            if following is not None:
                following.finish()
                current = following
    return u.reshape(rounds, m), seen.reshape(rounds, m)
