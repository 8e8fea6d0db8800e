"""A vector register's worth of numbers in compiled (Numba) code: the lanes of the sparse ×
dense product and of the graph term of :mod:`._linalg`.

Numba's loop vectorizer makes slow code of a sparse row times a dense matrix (on TDT2, 7.9
against MKL's 5.8 ms): the loop over the columns is short, its trip count is not known, and its
sums must stay in registers across the row's non-zeros. :class:`Lanes` is one 64-byte register
(16 float32 or 8 float64 numbers; two 256-bit or four 128-bit registers where the CPU has no
512-bit ones), and the intrinsics below load, scale, add and store it through LLVM's masked
loads and stores, so that the last lanes of a row need no scalar loop and no lane past the row
is read or written. They multiply and then add, as separate IEEE operations (no fused
multiply–add), so a sum over the same products in the same order is the same bit for bit as
SciPy's.
"""

from __future__ import annotations

from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic, models, register_model

LANE_BYTES = 64


class Lanes(types.Type):
    """``LANE_BYTES`` of one floating dtype, held in a vector register."""

    def __init__(self, dtype):
        self.dtype = dtype
        super().__init__(name=f"Lanes({dtype})")

    @property
    def count(self) -> int:
        return LANE_BYTES * 8 // self.dtype.bitwidth


@register_model(Lanes)
class _LanesModel(models.PrimitiveModel):
    def __init__(self, dmm, fe_type):
        scalar = dmm.lookup(fe_type.dtype).get_value_type()
        super().__init__(dmm, fe_type, ir.VectorType(scalar, fe_type.count))


def _splat(builder, value, vector_type):
    zero = ir.Constant(ir.IntType(32), 0)
    single = builder.insert_element(ir.Constant(vector_type, None), value, zero)
    return builder.shuffle_vector(
        single, single, ir.Constant(ir.VectorType(ir.IntType(32), vector_type.count),
                                    [0] * vector_type.count))


def _first(builder, count, lanes):
    """The mask of the first ``count`` of ``lanes`` lanes."""
    i64 = ir.IntType(64)
    count = builder.sext(count, i64) if count.type.width < 64 else count
    index = ir.Constant(ir.VectorType(i64, lanes), list(range(lanes)))
    return builder.icmp_signed("<", index, _splat(builder, count, ir.VectorType(i64, lanes)))


def _masked(builder, name, vector, returns, arguments):
    """LLVM's ``llvm.masked.load`` / ``llvm.masked.store`` for ``vector``, named for opaque
    pointers (LLVM 20: llvmlite 0.45, Numba 0.62 on)."""
    suffix = "f32" if vector.element == ir.FloatType() else "f64"
    function = ir.FunctionType(returns, arguments)
    return cgutils.get_or_insert_function(builder.module, function,
                                          f"llvm.masked.{name}.v{vector.count}{suffix}.p0")


def _address(context, builder, array_type, array, offset):
    return builder.gep(context.make_array(array_type)(context, builder, array).data, [offset])


def _load(context, builder, array_type, array, offset, count, vector):
    """``array[offset : offset + count]`` in the first ``count`` lanes of ``vector`` (the others
    0), each number converted exactly from ``array``'s dtype (the same or a narrower one)."""
    stored = ir.VectorType(context.get_value_type(array_type.dtype), vector.count)
    where = _address(context, builder, array_type, array, offset)
    mask = _first(builder, count, vector.count)
    load = _masked(builder, "load", stored, stored, [where.type, ir.IntType(32), mask.type, stored])
    align = ir.Constant(ir.IntType(32), array_type.dtype.bitwidth // 8)
    loaded = builder.call(load, [where, align, mask, ir.Constant(stored, None)])
    return loaded if stored == vector else builder.fpext(loaded, vector)


@intrinsic
def lanes_zero(typingctx, like):
    """Lanes of ``like``'s dtype, all 0."""
    lanes = Lanes(like.dtype)

    def codegen(context, builder, signature, args):
        return ir.Constant(context.get_value_type(lanes), None)

    return lanes(like), codegen


@intrinsic
def lanes_load(typingctx, like, array, offset, count):
    """Lanes of ``like``'s dtype: ``array[offset : offset + count]`` in the first ``count``
    lanes, the others 0; ``array`` 1-D and contiguous, of ``like``'s dtype or a narrower one
    (each number converted exactly)."""
    lanes = Lanes(like.dtype)

    def codegen(context, builder, signature, args):
        vector = context.get_value_type(lanes)
        return _load(context, builder, signature.args[1], args[1], args[2], args[3], vector)

    return lanes(like, array, offset, count), codegen


@intrinsic
def lanes_add_scaled(typingctx, lanes, scale, array, offset, count):
    """``lanes + scale · array[offset : offset + count]`` in the first ``count`` lanes (the
    others are ``lanes``'); ``array`` as in :func:`lanes_load`, ``scale`` converted to
    ``lanes``' dtype."""

    def codegen(context, builder, signature, args):
        total, factor, values, start, used = args
        vector = total.type
        factor = context.cast(builder, factor, signature.args[1], lanes.dtype)
        loaded = _load(context, builder, signature.args[2], values, start, used, vector)
        return builder.fadd(total, builder.fmul(_splat(builder, factor, vector), loaded))

    return lanes(lanes, scale, array, offset, count), codegen


def _lane_by_lane(name, instruction, symbol):
    """The intrinsic ``name(first, second)``: ``first symbol second``, lane by lane, by
    LLVM's ``instruction``."""

    def typer(typingctx, first, second):
        def codegen(context, builder, signature, args):
            return getattr(builder, instruction)(*args)

        return first(first, second), codegen

    typer.__name__ = typer.__qualname__ = name
    typer.__doc__ = f"``first {symbol} second``, lane by lane."
    return intrinsic(typer)


lanes_add = _lane_by_lane("lanes_add", "fadd", "+")
lanes_multiply = _lane_by_lane("lanes_multiply", "fmul", "·")
lanes_divide = _lane_by_lane("lanes_divide", "fdiv", "/")


@intrinsic
def lanes_rounded(typingctx, lanes, like):
    """Each lane rounded to ``like``'s dtype (a narrower one, or the same: unchanged) and
    converted back exactly: the result of an operation in the narrower dtype, when the lanes
    hold that operation's exact or correctly rounded result (a sum or product of two narrower
    numbers in float64 rounds to the float32 sum or product: 53 ≥ 2 · 24 + 2 bits)."""

    def codegen(context, builder, signature, args):
        vector = args[0].type
        narrow = ir.VectorType(context.get_value_type(like.dtype), vector.count)
        if narrow == vector:
            return args[0]
        return builder.fpext(builder.fptrunc(args[0], narrow), vector)

    return lanes(lanes, like), codegen


@intrinsic
def lanes_at_least(typingctx, lanes, bound):
    """``bound`` where a lane is below it, else the lane (NaN kept): ``np.maximum(x, bound)``,
    and Numba's ``max(x, bound)`` (which keeps −0.0 against a bound of 0.0); ``bound``
    converted to ``lanes``' dtype."""

    def codegen(context, builder, signature, args):
        value = args[0]
        bound = context.cast(builder, args[1], signature.args[1], lanes.dtype)
        bound = _splat(builder, bound, value.type)
        return builder.select(builder.fcmp_ordered("<", value, bound), bound, value)

    return lanes(lanes, bound), codegen


@intrinsic
def lanes_store(typingctx, lanes, array, offset, count):
    """``array[offset : offset + count]`` = the first ``count`` lanes, converted to ``array``'s
    dtype (the lanes' or a narrower one; exact where each lane holds a number of it)."""

    def codegen(context, builder, signature, args):
        total, values, start, used = args
        vector = total.type
        stored = ir.VectorType(context.get_value_type(array.dtype), vector.count)
        if stored != vector:
            total = builder.fptrunc(total, stored)
        where = _address(context, builder, signature.args[1], values, start)
        mask = _first(builder, used, vector.count)
        store = _masked(builder, "store", stored, ir.VoidType(),
                        [stored, where.type, ir.IntType(32), mask.type])
        align = ir.Constant(ir.IntType(32), array.dtype.bitwidth // 8)
        builder.call(store, [total, where, align, mask])
        return context.get_dummy_value()

    return types.void(lanes, array, offset, count), codegen
