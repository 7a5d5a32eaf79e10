"""The online-Elo bootstrap's update kernel for boards of up to 8 models, in explicit vector code.

:mod:`stats.elo_bootstrap` rates 128 rounds side by side with a scalar loop that writes
back and gathers each round's two ratings, and a loop LLVM vectorises for the exp and the
division; that scalar loop is most of its time. With up to 8 models a whole battle step of 8
rounds fits a few vector instructions, written here as LLVM IR through numba intrinsics:

* **Layout.** Each group of 8 rounds holds its ratings as 8 rows (one per model) of 8 lanes (one
  per round): ``g[64 * group + 8 * model + lane]``. :func:`_battle_steps` loads a group's rows
  into vector registers once, runs every battle step of the block on them, and stores them back
  at the end, so a step never waits for a store to reach memory before the next one reads it.
* **Registers, not memory, per step.** A lane's two ratings are picked out of the rows by a tree
  of three selects on the bits of its model id; the two new ratings go back by a compare and a
  select per row (``u_a`` first, then ``u_b``, as the reference stores them). These replaced
  masked gathers and scatters through memory: 12-18 % less time per update on a Zen 5 core.
* **Cells in bits.** A drawn battle is one byte ``model_a | model_b << 3 | outcome << 6``
  (:func:`bit_cells`): decoding it is three vector operations, no table.
* **The same operations.** ``x = u_b - u_a``, the portable exp (:func:`build_exp`: the same IEEE
  operations, in the same order, as ``portable_exp`` and the scalar ``_exp``; IR instructions carry
  no fast-math flags, so nothing is contracted or reordered), ``+ 1``, ``-K' / (.)``,
  ``+ (outcome * 0.5) * K'``, ``u_a + d``, ``u_b - d``.
* **Three groups per call** (24 rounds): their independent instruction chains interleave.

The vectors are generic LLVM ones (``<8 x double>``): on a CPU without AVX-512 LLVM lowers them
to narrower instructions, with the same results. :func:`exp_array` runs the vector exp over an
array so that ``elo_bootstrap.exp_matches_numpy`` can check it bit for bit before first use.

No Django here: numpy, numba and llvmlite only.
"""
from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic

from .portable_exp import (
    C2, C3, C4, C5, EXP_LIMIT, EXP_N, EXP_TAB, EXP_TABLE_BITS, INV_LN2_N, NEG_LN2_HI_N, NEG_LN2_LO_N, SHIFT,
)

# Models a board may have for this kernel, and lanes (rounds) per vector.
MAX_MODELS = 8
WIDTH = 8
# Vector groups advanced per call: three chains in flight measured fastest (one 25 % and two 8 %
# slower; with four, 32 rows no longer fit the vector registers and it was no faster).
GROUPS_PER_CALL = 3
ROUNDS_PER_CALL = WIDTH * GROUPS_PER_CALL

_F64 = ir.DoubleType()
_I64 = ir.IntType(64)
_I32 = ir.IntType(32)
_I8 = ir.IntType(8)
_I1 = ir.IntType(1)
_VF = ir.VectorType(_F64, WIDTH)
_VI = ir.VectorType(_I64, WIDTH)
_VB = ir.VectorType(_I1, WIDTH)
_VPI = ir.VectorType(ir.PointerType(_I64), WIDTH)

# The portable exp's table, frozen into the compiled code as a constant.
_EXP_TAB = EXP_TAB


def bit_cells(n_models: int) -> np.ndarray:
    """For every cell id ``a * 3m + b * 3 + outcome``: its byte ``a | b << 3 | outcome << 6``."""
    if not 1 <= n_models <= MAX_MODELS:
        raise ValueError(f"bit-coded cells hold up to {MAX_MODELS} models")
    cell = np.arange(n_models * n_models * 3)
    return ((cell // (3 * n_models)) | (((cell // 3) % n_models) << 3) | ((cell % 3) << 6)).astype(np.uint8)


# --------------------------------------------------------------------------- IR building blocks


def _splat(element_type, value):
    return ir.Constant(ir.VectorType(element_type, WIDTH), [ir.Constant(element_type, value)] * WIDTH)


def _broadcast(builder, value, vector_type):
    vector = ir.Constant(vector_type, ir.Undefined)
    for lane in range(WIDTH):
        vector = builder.insert_element(vector, value, ir.Constant(_I32, lane))
    return vector


def _addresses(builder, base, index, vector_pointer_type):
    """Pointers ``base + 8 * index`` (8-byte slots), lane by lane."""
    start = _broadcast(builder, builder.ptrtoint(base, _I64), _VI)
    return builder.inttoptr(builder.add(start, builder.shl(index, _splat(_I64, 3))), vector_pointer_type)


def _gather_bits(builder, base, index):
    """The 64-bit words ``base[index]``."""
    gather = cgutils.get_or_insert_function(
        builder.module, ir.FunctionType(_VI, [_VPI, _I32, _VB, _VI]), "llvm.masked.gather.v8i64.v8p0")
    return builder.call(gather, [_addresses(builder, base, index, _VPI), ir.Constant(_I32, 8), _splat(_I1, 1),
                                 ir.Constant(_VI, None)])


def _fabs(builder, x):
    fabs = cgutils.get_or_insert_function(builder.module, ir.FunctionType(_VF, [_VF]), "llvm.fabs.v8f64")
    return builder.call(fabs, [x])


def _const(value):
    return _splat(_F64, value)


def build_exp(builder, x, table):
    """``portable_exp`` of a vector on its table path (|x| < 512), operation for operation."""
    b = builder
    kd = b.fadd(b.fmul(x, _const(INV_LN2_N)), _const(SHIFT))
    ki = b.bitcast(kd, _VI)
    kd = b.fsub(kd, _const(SHIFT))
    r = b.fadd(b.fadd(x, b.fmul(kd, _const(NEG_LN2_HI_N))), b.fmul(kd, _const(NEG_LN2_LO_N)))
    slot = b.shl(b.and_(ki, _splat(_I64, EXP_N - 1)), _splat(_I64, 1))
    tail = b.bitcast(_gather_bits(b, table, slot), _VF)
    scale_bits = b.add(_gather_bits(b, table, b.add(slot, _splat(_I64, 1))),
                       b.shl(ki, _splat(_I64, 52 - EXP_TABLE_BITS)))
    scale = b.bitcast(scale_bits, _VF)
    r2 = b.fmul(r, r)
    tmp = b.fadd(b.fadd(tail, r), b.fmul(r2, b.fadd(_const(C2), b.fmul(r, _const(C3)))))
    tmp = b.fadd(tmp, b.fmul(b.fmul(r2, r2), b.fadd(_const(C4), b.fmul(r, _const(C5)))))
    return b.fadd(scale, b.fmul(scale, tmp))


def build_exp_beyond(builder, x, table_value):
    """The table path's result where |x| < 512; inf above, 0 below and NaN for NaN elsewhere."""
    b = builder
    inside = b.fcmp_ordered("<", _fabs(b, x), _const(EXP_LIMIT))
    beyond = b.select(b.fcmp_ordered(">", x, _const(0.0)), _const(float("inf")), _const(0.0))
    beyond = b.select(b.fcmp_unordered("uno", x, x), x, beyond)
    return b.select(inside, table_value, beyond)


def _all_inside(builder, x):
    inside = builder.fcmp_ordered("<", _fabs(builder, x), _const(EXP_LIMIT))
    return builder.icmp_unsigned("==", builder.bitcast(inside, _I8), ir.Constant(_I8, 0xFF))


def _data(context, builder, array_type, array):
    return context.make_array(array_type)(context, builder, array).data


# ------------------------------------------------------------------------------------- exp check


@intrinsic
def _exp_vector(typingctx, x, out, start, table):
    """``out[start:start + 8] = portable_exp(x[start:start + 8])`` with the kernel's vector code."""
    signature = types.void(x, out, start, table)

    def codegen(context, builder, sig, args):
        x_array, out_array, start_index, table_array = args
        source = builder.gep(_data(context, builder, sig.args[0], x_array), [start_index])
        target = builder.gep(_data(context, builder, sig.args[1], out_array), [start_index])
        table_data = builder.bitcast(_data(context, builder, sig.args[3], table_array), ir.PointerType(_I64))
        value = builder.load(builder.bitcast(source, ir.PointerType(_VF)), align=8)
        result = build_exp_beyond(builder, value, build_exp(builder, value, table_data))
        builder.store(result, builder.bitcast(target, ir.PointerType(_VF)), align=8)
        return context.get_dummy_value()

    return signature, codegen


@njit(nogil=True, cache=True, boundscheck=False, error_model="numpy")
def _exp_padded(x, out):
    table = _EXP_TAB
    for start in range(0, x.shape[0], WIDTH):
        _exp_vector(x, out, start, table)


def exp_array(x: np.ndarray) -> np.ndarray:
    """The vector kernel's exp of a float64 array (a new array)."""
    count = x.shape[0]
    padded = np.zeros(-(-count // WIDTH) * WIDTH)
    padded[:count] = x
    out = np.empty_like(padded)
    _exp_padded(padded, out)
    return out[:count]


# ------------------------------------------------------------------------------------ the kernel


def _select_row(builder, rows, model):
    """Each lane's value from ``rows[model[lane]]`` (8 rows; ``model`` in bytes, whose compares are
    cheaper than 64-bit ones): a tree of selects on the index's three bits."""
    level = rows
    for bit in range(3):
        mask = builder.icmp_unsigned("!=", builder.and_(model, _splat(_I8, 1 << bit)), _splat(_I8, 0))
        level = [builder.select(mask, level[i + 1], level[i]) for i in range(0, len(level), 2)]
    return level[0]


@intrinsic
def _battle_steps(typingctx, g, g_start, cells, cell_start, cell_stride, steps, table, k_unit):
    """``steps`` battle steps of ``ROUNDS_PER_CALL`` rounds: groups of 8 at ``g[g_start + 64 * group:]``,
    the cells of step ``s`` at ``cells[cell_start + s * cell_stride:]``. The groups' ratings stay in
    vector registers from the first step to the last."""
    signature = types.void(g, g_start, cells, cell_start, cell_stride, steps, table, k_unit)

    def codegen(context, builder, sig, args):
        g_array, g_offset, cells_array, cell_offset, stride, step_count, table_array, k = args
        b = builder
        ratings = _data(context, b, sig.args[0], g_array)
        cell_data = _data(context, b, sig.args[2], cells_array)
        table_data = b.bitcast(_data(context, b, sig.args[6], table_array), ir.PointerType(_I64))
        k_vector = _broadcast(b, k, _VF)
        neg_k = b.fneg(k_vector)
        groups = range(GROUPS_PER_CALL)
        models = range(MAX_MODELS)
        # Row j of a group: model j's ratings in the group's 8 rounds. Held in stack slots that
        # LLVM promotes to registers, so the loop below never goes through memory for them.
        row_pointers = [[b.bitcast(b.gep(ratings, [b.add(g_offset, ir.Constant(_I64, 64 * q + WIDTH * j))]),
                                   ir.PointerType(_VF)) for j in models] for q in groups]
        rows = [[cgutils.alloca_once(b, _VF) for _ in models] for _ in groups]
        for q in groups:
            for j in models:
                b.store(b.load(row_pointers[q][j], align=8), rows[q][j])
        with cgutils.for_range(b, step_count) as loop:
            position = b.add(cell_offset, b.mul(loop.index, stride))
            bytes_ = [b.load(b.bitcast(b.gep(cell_data, [b.add(position, ir.Constant(_I64, WIDTH * q))]),
                                       ir.PointerType(ir.VectorType(_I8, WIDTH))), align=1) for q in groups]
            codes = [b.zext(c, _VI) for c in bytes_]
            current = [[b.load(rows[q][j]) for j in models] for q in groups]
            model_a = [b.and_(c, _splat(_I8, 7)) for c in bytes_]
            model_b = [b.and_(b.lshr(c, _splat(_I8, 3)), _splat(_I8, 7)) for c in bytes_]
            u_a = [_select_row(b, current[q], model_a[q]) for q in groups]
            u_b = [_select_row(b, current[q], model_b[q]) for q in groups]
            x = [b.fsub(u_b[q], u_a[q]) for q in groups]
            e = [build_exp(b, x[q], table_data) for q in groups]
            for q in groups:
                # Never with real ratings (a gap of 88,000 Elo points), but exact all the same.
                slot = cgutils.alloca_once_value(b, e[q])
                with b.if_then(b.not_(_all_inside(b, x[q])), likely=False):
                    b.store(build_exp_beyond(b, x[q], b.load(slot)), slot)
                e[q] = b.load(slot)
            score = [b.fmul(b.fmul(b.uitofp(b.lshr(c, _splat(_I64, 6)), _VF), _const(0.5)), k_vector) for c in codes]
            d = [b.fadd(b.fdiv(neg_k, b.fadd(e[q], _const(1.0))), score[q]) for q in groups]
            new_a = [b.fadd(u_a[q], d[q]) for q in groups]
            new_b = [b.fsub(u_b[q], d[q]) for q in groups]
            for q in groups:
                for j in models:
                    # u_a written back first, then u_b, as the reference stores them.
                    model = _splat(_I8, j)
                    value = b.select(b.icmp_unsigned("==", model_a[q], model), new_a[q], current[q][j])
                    value = b.select(b.icmp_unsigned("==", model_b[q], model), new_b[q], value)
                    b.store(value, rows[q][j])
        for q in groups:
            for j in models:
                b.store(b.load(rows[q][j]), row_pointers[q][j], align=8)
        return context.get_dummy_value()

    return signature, codegen


@njit(nogil=True, cache=True, boundscheck=False, error_model="numpy")
def part_cells(buffer, physical, length, steps, rounds, first, width, stride, cells):
    """The drawn cells of rounds ``first..first+width-1``, step by step, into ``cells[stride * step:]``
    (both kernels). A block's logical draws are the segments ``buffer[physical[j]:][:length[j]]``
    one after another; step ``s`` of round ``r`` is logical draw ``s * rounds + r``."""
    segment, segment_start = 0, 0
    for step in range(steps):
        position = step * rounds + first
        done = 0
        while done < width:
            while position + done >= segment_start + length[segment]:
                segment_start += length[segment]
                segment += 1
            offset = position + done - segment_start
            take = min(width - done, length[segment] - offset)
            source = physical[segment] + offset
            cells[step * stride + done:step * stride + done + take] = buffer[source:source + take]
            done += take


@njit(nogil=True, cache=True, boundscheck=False, error_model="numpy")
def elo_block(buffer, physical, length, steps, rounds, first, last, n_models, k_unit, u, seen, track):
    """``elo_bootstrap._elo_block`` for bit-coded cells and up to 8 models: rounds
    ``first..last-1`` through the block's ``steps`` battle steps. Returns whether every model of
    these rounds has been seen."""
    width = last - first
    calls = (width + ROUNDS_PER_CALL - 1) // ROUNDS_PER_CALL
    padded = calls * ROUNDS_PER_CALL
    # The part's cells, step by step, padded with cell 0 (model 0 against itself) for the
    # lanes past the last round; those lanes are never written back.
    cells = np.zeros(steps * padded, dtype=np.uint8)
    part_cells(buffer, physical, length, steps, rounds, first, width, padded, cells)

    m = n_models
    if track:
        for step in range(steps):
            for i in range(width):
                code = cells[step * padded + i]
                seen[(first + i) * m + (code & 7)] = True
                seen[(first + i) * m + ((code >> 3) & 7)] = True

    g = np.zeros(padded * MAX_MODELS)
    for i in range(width):
        for j in range(m):
            g[(i // WIDTH) * 64 + j * WIDTH + i % WIDTH] = u[(first + i) * m + j]
    table = _EXP_TAB
    for call in range(calls):
        _battle_steps(g, call * ROUNDS_PER_CALL * MAX_MODELS, cells, call * ROUNDS_PER_CALL, padded, steps, table,
                      k_unit)
    for i in range(width):
        for j in range(m):
            u[(first + i) * m + j] = g[(i // WIDTH) * 64 + j * WIDTH + i % WIDTH]

    all_seen = True
    for j in range(first * m, last * m):
        all_seen &= seen[j]
    return all_seen
