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
  rejected words left out, whatever the block sizes. The raw words come from numpy's own PCG64
  (``random_raw``); PCG64's ``advance`` lets each thread generate its own stretch of the stream.
* **The same float operations, in the same order**: ``x = u_b - u_a``, ``exp(x)``, ``+ 1``,
  ``-K' / (.)``, ``+ K' S_a``, ``u_a + d``, ``u_b - d`` (see the reference).
* **The same exp**: ``portable_exp`` (glibc's table-driven algorithm without fused multiply-adds,
  one IEEE operation per step), which the reference computes with numpy array operations and
  :func:`_exp` with the same scalar operations, compiled without fast-math. Before the first use,
  :func:`exp_matches_numpy` compares the two on a fixed sample of 400,000 arguments (every table
  slot, tiny, huge and boundary values); should they differ in a single bit, ratings fall back to
  the reference.

No Django here: numpy and numba only.
"""
from __future__ import annotations

import math
import os
from concurrent.futures import ThreadPoolExecutor
from functools import lru_cache

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic

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
    with np.errstate(over="ignore", under="ignore", invalid="ignore"):
        theirs = portable_exp(sample)
    return bool(np.array_equal(ours.view(np.uint64), theirs.view(np.uint64)))


# ------------------------------------------------------------------------------ resampling


@njit(nogil=True, cache=True, boundscheck=False)
def _draw_cells(raw, n, threshold, cell_of_battle, out, start):
    """Lemire-map the 32-bit words of ``raw`` (low half first) to battle indices in [0, n), drop
    the rejected words, and write each drawn battle's cell to ``out[start:]``; returns the count."""
    written = start
    n64 = np.uint64(n)
    low_mask = np.uint64(0xFFFFFFFF)
    for i in range(raw.shape[0]):
        word = raw[i]
        product = (word & low_mask) * n64
        if (product & low_mask) >= threshold:
            out[written] = cell_of_battle[product >> np.uint64(32)]
            written += 1
        product = (word >> np.uint64(32)) * n64
        if (product & low_mask) >= threshold:
            out[written] = cell_of_battle[product >> np.uint64(32)]
            written += 1
    return written - start


class _CellStream:
    """The cells of the battles ``rng.integers(0, n, ...)`` draws, in order, generated by threads.

    ``fill(count)`` makes the next ``count`` draws available as a logical sequence held in
    ``buffer`` with at most one gap: logical position p is ``buffer[p]`` before ``split`` and
    ``buffer[p + gap]`` from there on. Draws made beyond ``count`` are kept for the next call.
    """

    def __init__(self, seed: int, n: int, cell_of_battle: np.ndarray, pool: ThreadPoolExecutor, parts: int):
        self.bitgen = np.random.PCG64(seed)
        self.n = n
        self.threshold = np.uint64((1 << 32) % n)
        self.accept = 1.0 - float((1 << 32) % n) / 2.0**32
        self.cell_of_battle = cell_of_battle
        self.pool = pool
        self.parts = parts
        self.dtype = cell_of_battle.dtype
        self.pending = np.empty(0, dtype=self.dtype)
        self.buffer = np.empty(0, dtype=self.dtype)
        self.split = self.gap = self.available = 0

    def _generator_at(self, offset: int) -> np.random.PCG64:
        generator = np.random.PCG64(0)
        generator.state = self.bitgen.state
        if offset:
            generator.advance(offset)
        return generator

    def _generate(self, generator: np.random.PCG64, words: int, start: int) -> int:
        raw = generator.random_raw(words)
        return _draw_cells(raw, self.n, self.threshold, self.cell_of_battle, self.buffer, start)

    def fill(self, count: int) -> None:
        kept = self.pending.shape[0]
        needed = max(0, count - kept)
        # 64-bit words to draw: two candidates each, a few spare for rejections.
        words = int(math.ceil(needed / (2.0 * self.accept))) + 4 if needed else 0
        sizes = [words // self.parts + (1 if part < words % self.parts else 0) for part in range(self.parts)]
        capacity = kept + 2 * words
        if self.buffer.shape[0] < capacity:
            self.buffer = np.empty(int(capacity * 1.05) + 64, dtype=self.dtype)
        self.buffer[:kept] = self.pending
        starts, offset, position = [], 0, kept
        jobs = []
        for size in sizes:
            jobs.append((self._generator_at(offset), size, position))
            starts.append(position)
            offset += size
            position += 2 * size
        self.bitgen.advance(offset)
        written = list(self.pool.map(lambda job: self._generate(*job), jobs)) if words else [0] * len(jobs)
        # Close the stream: every part but the first two goes right after its predecessor.
        end = kept + written[0]
        self.split, self.gap = end, 0
        for part in range(1, len(sizes)):
            if part == 1:
                self.gap = starts[1] - end
            else:
                physical_end = end + self.gap
                self.buffer[physical_end:physical_end + written[part]] = self.buffer[starts[part]:starts[part] + written[part]]
            end += written[part]
        self.available = end
        while self.available < count:  # more rejections than spare words: draw on, one part
            extra = int(math.ceil((count - self.available) / (2.0 * self.accept))) + 4
            physical_end = self.available + (self.gap if self.available >= self.split else 0)
            if self.buffer.shape[0] < physical_end + 2 * extra:
                grown = np.empty(physical_end + 2 * extra + 64, dtype=self.dtype)
                grown[:physical_end] = self.buffer[:physical_end]
                self.buffer = grown
            generator = self._generator_at(0)
            self.available += self._generate(generator, extra, physical_end)
            self.bitgen.advance(extra)
        self._keep_rest(count)

    def _keep_rest(self, count: int) -> None:
        rest = np.arange(count, self.available)
        rest = np.where(rest >= self.split, rest + self.gap, rest)
        self.pending = self.buffer[rest].copy()


# ------------------------------------------------------------------------------------ Elo


@njit(nogil=True, cache=True, boundscheck=False, error_model="numpy")
def _elo_steps(cells, split, gap, steps, rounds, first, last, n_models, a_of_cell, b_of_cell,
               score_of_cell, k_unit, u, seen, x, score, pos_a, pos_b, delta):
    """Rounds ``first..last-1`` through ``steps`` battle steps; ``u`` is (rounds * models) flat.

    Per step: a scalar loop applies the previous step's updates and gathers the next ratings, a
    vectorised loop computes the updates (the exp), in the reference's float operations.
    """
    width = last - first
    for step in range(steps + 1):
        row = step * rounds + first
        for i in range(width):
            if step > 0:
                d = delta[i]
                u[pos_a[i]] = u[pos_a[i]] + d
                u[pos_b[i]] = u[pos_b[i]] - d
            if step < steps:
                position = row + i
                if position >= split:
                    position += gap
                cell = cells[position]
                base = (first + i) * n_models
                a = base + a_of_cell[cell]
                b = base + b_of_cell[cell]
                seen[a] = True
                seen[b] = True
                x[i] = u[b] - u[a]
                score[i] = score_of_cell[cell]
                pos_a[i] = a
                pos_b[i] = b
        if step == steps:
            break
        outside = False
        for i in range(width):
            value = x[i]
            outside |= not (abs(value) < _EXP_TABLE_LIMIT)
            delta[i] = -k_unit / (_exp(value) + 1.0) + score[i]
        if outside:  # never with real ratings (a gap of 88,000 Elo points), but exact all the same
            for i in range(width):
                if not (abs(x[i]) < _EXP_TABLE_LIMIT):
                    delta[i] = -k_unit / (_exp_outside(x[i]) + 1.0) + score[i]


def default_threads() -> int:
    return max(1, min(len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1, 8))


# Cells drawn per block (steps x rounds); about 2 MB of uint8 cells in flight.
_BLOCK_DRAWS = 1 << 21


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
    # Integer-encoded battles in the narrowest type: with up to 9 models the cells fit a byte, so
    # the table the draws look up (one random access per draw) is a quarter of the int32 one and
    # stays in the core's cache at 1M battles.
    cell_type = np.uint8 if m * m * 3 <= 256 else np.uint16 if m * m * 3 <= 65536 else np.int32
    cells_table = np.ascontiguousarray(cell_of_battle, dtype=cell_type)
    cell_ids = np.arange(m * m * 3)
    a_of_cell = (cell_ids // (3 * m)).astype(np.int64)
    b_of_cell = ((cell_ids // 3) % m).astype(np.int64)
    score_of_cell = np.ascontiguousarray(score_of_cell, dtype=np.float64)
    u = np.zeros(rounds * m)
    seen = np.zeros(rounds * m, dtype=np.bool_)
    parts = min(threads, rounds)
    bounds = np.linspace(0, rounds, parts + 1).astype(np.int64)
    scratch = [
        (np.empty(hi - lo), np.empty(hi - lo), np.empty(hi - lo, np.int64), np.empty(hi - lo, np.int64), np.empty(hi - lo))
        for lo, hi in zip(bounds[:-1], bounds[1:])
    ]
    steps_per_block = max(1, _BLOCK_DRAWS // rounds)
    with ThreadPoolExecutor(max_workers=threads) as pool:
        stream = _CellStream(seed, n, cells_table, pool, threads)

        def run(part: int, steps: int) -> None:
            x, score, pos_a, pos_b, delta = scratch[part]
            _elo_steps(stream.buffer, stream.split, stream.gap, steps, rounds, bounds[part], bounds[part + 1], m,
                       a_of_cell, b_of_cell, score_of_cell, k_unit, u, seen, x, score, pos_a, pos_b, delta)

        for start in range(0, n, steps_per_block):
            steps = min(steps_per_block, n - start)
            if n == 1:  # numpy draws nothing for a range of one value: every index is 0
                stream.buffer = np.full(steps * rounds, cells_table[0], dtype=cell_type)
                stream.split, stream.gap = steps * rounds, 0
            else:
                stream.fill(steps * rounds)
            list(pool.map(lambda part: run(part, steps), range(parts)))
    return u.reshape(rounds, m), seen.reshape(rounds, m)
