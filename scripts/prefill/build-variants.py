"""Issue #38 (cold prefill): the 135M-shaped q4 bench graph rewritten so its weight products
run on other onnxruntime kernels, for bench/prefill-matmul-probe.ts to time at M = 808.

  nice /work/venv/bin/python scripts/prefill/build-variants.py <model_q4.inplace.onnx> <out dir>

Writes, from the bench model's own q4 weights (the head stays MatMulNBits in every variant: a
prefill projects only the last position):
  q4-acc1.onnx      MatMulNBits with accuracy_level 1 (fp32 compute; the served graph says 4 = int8)
  fp32.onnx         MatMul on the q4 weights dequantized to float32 once
  dqmm.onnx         com.microsoft DynamicQuantizeMatMul on the weights requantized to int8
                    (symmetric, one scale per output column)
  mmi.onnx          DynamicQuantizeLinear + MatMulInteger + scale, the same int8 weights
  q8.onnx           MatMulNBits bits 8 on the same block values and scales (exact), accuracy_level 4
  q8-acc1.onnx      the same, accuracy_level 1
  mmi-row8.onnx     per-row symmetric scales as uint8 around a zero point of 128 (the fast u8 x s8 path)
  mmi-row.onnx      per-row symmetric int8 activations, MatMulInteger int8 x int8, the same int8 weights
and one graph per projection shape of layer 0 ("layer-<proj>-<variant>.onnx", input x [M, K]).
"""
import sys, os
import numpy as np
import onnx
from onnx import helper, numpy_helper, TensorProto

src, out = sys.argv[1], sys.argv[2]
os.makedirs(out, exist_ok=True)
model = onnx.load(src)
inits = {t.name: t for t in model.graph.initializer}


def attr(node, name, default=None):
    for a in node.attribute:
        if a.name == name:
            return helper.get_attribute_value(a)
    return default


def dequantize(node):
    """[K, N] float32 from MatMulNBits' packed 4-bit blocks (no zero points: 8 is zero)."""
    K, N, block = attr(node, 'K'), attr(node, 'N'), attr(node, 'block_size')
    assert len(node.input) == 3, 'zero points not handled'
    q = numpy_helper.to_array(inits[node.input[1]])  # [N, blocks, block/2] uint8
    s = numpy_helper.to_array(inits[node.input[2]]).reshape(N, -1)  # [N, blocks]
    low, high = (q & 0x0F).astype(np.int8), (q >> 4).astype(np.int8)
    vals = np.stack([low, high], axis=-1).reshape(N, q.shape[1], block) - 8  # low nibble first
    w = vals.astype(np.float32) * s[:, :, None]
    return np.ascontiguousarray(w.reshape(N, -1)[:, :K].T)


def int8_columns(w):
    scale = np.abs(w).max(axis=0) / 127.0
    scale[scale == 0] = 1.0
    q = np.clip(np.rint(w / scale), -127, 127).astype(np.int8)
    return q, scale.astype(np.float32)


def replacement(node, variant, prefix):
    """(nodes, initializers) computing node's output with `variant`."""
    x, y = node.input[0], node.output[0]
    if variant == 'q4-acc1':
        n = onnx.NodeProto(); n.CopyFrom(node)
        for a in n.attribute:
            if a.name == 'accuracy_level':
                a.i = 1
        return [n], []
    if variant in ('q8', 'q8-acc1'):
        # The same block values (q - 8 in [-8, 7]) and scales, stored 8-bit (zero point 128).
        K, N, block = attr(node, 'K'), attr(node, 'N'), attr(node, 'block_size')
        q = numpy_helper.to_array(inits[node.input[1]])
        vals = np.stack([q & 0x0F, q >> 4], axis=-1).reshape(N, q.shape[1], block).astype(np.int16) - 8 + 128
        n = helper.make_node('MatMulNBits', [x, prefix + '.q8', node.input[2]], [y], name=node.name + '_q8', domain='com.microsoft',
                             K=K, N=N, bits=8, block_size=block, accuracy_level=4 if variant == 'q8' else 1)
        return [n], [numpy_helper.from_array(vals.astype(np.uint8), prefix + '.q8'), inits[node.input[2]]]
    w = dequantize(node)
    if variant == 'fp32':
        return [helper.make_node('MatMul', [x, prefix + '.w'], [y], name=node.name + '_fp32')], [numpy_helper.from_array(w, prefix + '.w')]
    q, scale = int8_columns(w)
    ws = [numpy_helper.from_array(q, prefix + '.w8'), numpy_helper.from_array(scale, prefix + '.wscale')]
    if variant == 'dqmm':
        return [helper.make_node('DynamicQuantizeMatMul', [x, prefix + '.w8', prefix + '.wscale'], [y], name=node.name + '_dqmm', domain='com.microsoft')], ws
    if variant == 'mmi':
        xq, xs, xz, acc, accf, sc = (prefix + s for s in ('.xq', '.xs', '.xz', '.acc', '.accf', '.sc'))
        zero = numpy_helper.from_array(np.zeros(1, np.int8)[0:1].reshape(()), prefix + '.wz')
        return [
            helper.make_node('DynamicQuantizeLinear', [x], [xq, xs, xz], name=node.name + '_dql'),
            helper.make_node('MatMulInteger', [xq, prefix + '.w8', xz, prefix + '.wz'], [acc], name=node.name + '_mmi'),
            helper.make_node('Cast', [acc], [accf], to=TensorProto.FLOAT, name=node.name + '_cast'),
            helper.make_node('Mul', [xs, prefix + '.wscale'], [sc], name=node.name + '_scale'),
            helper.make_node('Mul', [accf, sc], [y], name=node.name + '_mul'),
        ], ws + [zero]
    if variant == 'mmi-row':
        # Per-row (per-token) symmetric int8 activations, int8 x int8 products: finer than
        # DynamicQuantizeLinear's one scale for the whole [M, K] activation.
        amax, xs, xsc, xr, xq, acc, accf, sc = (prefix + s for s in ('.amax', '.xs', '.xsc', '.xr', '.xq', '.acc', '.accf', '.sc'))
        consts = [numpy_helper.from_array(np.array(1 / 127, np.float32), prefix + '.inv127'),
                  numpy_helper.from_array(np.array(1e-30, np.float32), prefix + '.tiny')]
        return [
            helper.make_node('Abs', [x], [prefix + '.absx'], name=node.name + '_abs'),
            helper.make_node('ReduceMax', [prefix + '.absx'], [amax], keepdims=1, axes=[-1], name=node.name + '_amax'),
            helper.make_node('Mul', [amax, prefix + '.inv127'], [xs], name=node.name + '_xs'),
            helper.make_node('Max', [xs, prefix + '.tiny'], [xsc], name=node.name + '_xsc'),
            helper.make_node('Div', [x, xsc], [xr], name=node.name + '_div'),
            helper.make_node('Round', [xr], [prefix + '.xround'], name=node.name + '_round'),
            helper.make_node('Cast', [prefix + '.xround'], [xq], to=TensorProto.INT8, name=node.name + '_q'),
            helper.make_node('MatMulInteger', [xq, prefix + '.w8'], [acc], name=node.name + '_mmi'),
            helper.make_node('Cast', [acc], [accf], to=TensorProto.FLOAT, name=node.name + '_cast'),
            helper.make_node('Mul', [xsc, prefix + '.wscale'], [sc], name=node.name + '_scale'),
            helper.make_node('Mul', [accf, sc], [y], name=node.name + '_mul'),
        ], ws + consts
    if variant == 'mmi-row8':
        # Per-row symmetric scales on onnxruntime's fast u8 x s8 path: round(x / s_row) + 128
        # as uint8 with one scalar zero point 128 (MatMulInteger int8 x int8 is ~5x slower here).
        amax, xs, xsc, xr, xq, acc, accf, sc = (prefix + s for s in ('.amax', '.xs', '.xsc', '.xr', '.xq', '.acc', '.accf', '.sc'))
        consts = [numpy_helper.from_array(np.array(1 / 127, np.float32), prefix + '.inv127'),
                  numpy_helper.from_array(np.array(1e-30, np.float32), prefix + '.tiny'),
                  numpy_helper.from_array(np.array(128, np.float32), prefix + '.f128'),
                  numpy_helper.from_array(np.array(128, np.uint8), prefix + '.z128')]
        return [
            helper.make_node('Abs', [x], [prefix + '.absx'], name=node.name + '_abs'),
            helper.make_node('ReduceMax', [prefix + '.absx'], [amax], keepdims=1, axes=[-1], name=node.name + '_amax'),
            helper.make_node('Mul', [amax, prefix + '.inv127'], [xs], name=node.name + '_xs'),
            helper.make_node('Max', [xs, prefix + '.tiny'], [xsc], name=node.name + '_xsc'),
            helper.make_node('Div', [x, xsc], [xr], name=node.name + '_div'),
            helper.make_node('Round', [xr], [prefix + '.xround'], name=node.name + '_round'),
            helper.make_node('Add', [prefix + '.xround', prefix + '.f128'], [prefix + '.xshift'], name=node.name + '_shift'),
            helper.make_node('Cast', [prefix + '.xshift'], [xq], to=TensorProto.UINT8, name=node.name + '_q'),
            helper.make_node('MatMulInteger', [xq, prefix + '.w8', prefix + '.z128'], [acc], name=node.name + '_mmi'),
            helper.make_node('Cast', [acc], [accf], to=TensorProto.FLOAT, name=node.name + '_cast'),
            helper.make_node('Mul', [xsc, prefix + '.wscale'], [sc], name=node.name + '_scale'),
            helper.make_node('Mul', [accf, sc], [y], name=node.name + '_mul'),
        ], ws + consts
    raise ValueError(variant)


def rewrite(variant):
    m = onnx.ModelProto(); m.CopyFrom(model)
    g = m.graph
    nodes, new_inits, dropped = [], [], set()
    for node in g.node:
        if node.op_type == 'MatMulNBits' and not node.name.startswith('/lm_head'):
            prefix = node.input[1].replace('.MatMulNBits.qweight', '.' + variant)
            ns, ws = replacement(node, variant, prefix)
            nodes += ns; new_inits += [w for w in ws if w.name not in inits]
            if variant != 'q4-acc1':
                dropped.add(node.input[1])
                if not variant.startswith('q8'):
                    dropped.add(node.input[2])
        else:
            nodes.append(node)
    del g.node[:]; g.node.extend(nodes)
    keep = [t for t in g.initializer if t.name not in dropped]
    del g.initializer[:]; g.initializer.extend(keep + new_inits)
    return m


def save(m, path):
    onnx.save(m, path, save_as_external_data=m.ByteSize() > 1.9e9)
    print(path, os.path.getsize(path) // 2**20, 'MiB')


for variant in sys.argv[3].split(',') if len(sys.argv) > 3 else ('q4-acc1', 'fp32', 'dqmm', 'mmi', 'q8', 'q8-acc1'):
    save(rewrite(variant), os.path.join(out, f'{variant}.onnx'))

# One projection of layer 0 alone, x [M, K] -> y [M, N].
for node in model.graph.node:
    if not node.name.startswith('/model/layers.0/') or node.op_type != 'MatMulNBits':
        continue
    proj = node.name.split('/')[-2]
    K, N = attr(node, 'K'), attr(node, 'N')
    for variant in ('q4', 'q4-acc1', 'fp32', 'dqmm', 'mmi', 'q8', 'q8-acc1', 'mmi-row', 'mmi-row8'):
        base = onnx.NodeProto(); base.CopyFrom(node)
        del base.input[0]; base.input.insert(0, 'x'); del base.output[:]; base.output.append('y')
        if variant == 'q4':
            ns, ws = [base], [inits[node.input[1]], inits[node.input[2]]]
        else:
            ns, ws = replacement(base, variant, 'w')
            if variant == 'q4-acc1' or variant.startswith('q8'):
                ws = ws[:1] if variant.startswith('q8') else []
                ws += [inits[node.input[1]], inits[node.input[2]]]
        g = helper.make_graph(ns, f'{proj}-{variant}',
                              [helper.make_tensor_value_info('x', TensorProto.FLOAT, ['M', K])],
                              [helper.make_tensor_value_info('y', TensorProto.FLOAT, ['M', N])], ws)
        m = helper.make_model(g, opset_imports=[helper.make_opsetid('', 17), helper.make_opsetid('com.microsoft', 1)], ir_version=8)
        save(m, os.path.join(out, f'layer-{proj}-{variant}.onnx'))
