"""Issue #38: is MatMulNBits' speed at M = 808 a matter of block size? Layer 0's projections of
the bench model (its q4 weights dequantized) requantized to 4 bits with blocks of 32 / 64 / 128
(symmetric, zero point 8, accuracy_level 4), timed interleaved, one thread, CPU time.

  nice /work/venv/bin/python scripts/prefill/block-size-probe.py <variants dir> [M] [rounds]
"""
import sys, os, time
import numpy as np
import onnx
import onnxruntime as ort
from onnx import helper, numpy_helper, TensorProto

vdir = sys.argv[1]
M = int(sys.argv[2]) if len(sys.argv) > 2 else 808
ROUNDS = int(sys.argv[3]) if len(sys.argv) > 3 else 9
so = ort.SessionOptions(); so.intra_op_num_threads = 1; so.log_severity_level = 3


def q4_graph(w, block):
    K, N = w.shape
    blocks = -(-K // block)  # a last partial block is zero-padded (MatMulNBits' layout)
    wb = np.pad(w.T, ((0, 0), (0, blocks * block - K))).reshape(N, blocks, block)
    scale = np.abs(wb).max(-1) / 7.0
    scale[scale == 0] = 1
    q = (np.clip(np.rint(wb / scale[..., None]), -8, 7) + 8).astype(np.uint8)
    packed = (q[..., 0::2] | (q[..., 1::2] << 4)).astype(np.uint8)
    node = helper.make_node('MatMulNBits', ['x', 'qw', 'sc'], ['y'], domain='com.microsoft', K=K, N=N, bits=4, block_size=block, accuracy_level=4)
    g = helper.make_graph([node], 'b', [helper.make_tensor_value_info('x', TensorProto.FLOAT, ['M', K])],
                          [helper.make_tensor_value_info('y', TensorProto.FLOAT, ['M', N])],
                          [numpy_helper.from_array(packed, 'qw'), numpy_helper.from_array(scale.reshape(-1).astype(np.float32), 'sc')])
    return helper.make_model(g, opset_imports=[helper.make_opsetid('', 17), helper.make_opsetid('com.microsoft', 1)], ir_version=8).SerializeToString()


cases = []
for proj in ('qkv_proj', 'o_proj', 'gate_up_proj', 'down_proj'):
    fp32 = onnx.load(os.path.join(vdir, f'layer-{proj}-fp32.onnx'))
    w = numpy_helper.to_array(fp32.graph.initializer[0])
    x = np.sin(np.arange(M * w.shape[0]) * 0.37).astype(np.float32).reshape(M, w.shape[0])
    for block in (32, 64, 128):
        cases.append((proj, block, ort.InferenceSession(q4_graph(w, block), so, providers=['CPUExecutionProvider']), x))
cpu = {(p, b): [] for p, b, _, _ in cases}
for r in range(ROUNDS):
    for p, b, s, x in cases[r % len(cases):] + cases[:r % len(cases)]:
        c0 = time.process_time()
        for _ in range(5):
            s.run(['y'], {'x': x})
        cpu[(p, b)].append((time.process_time() - c0) / 5)
print(f'M={M}, one thread, {ROUNDS} rounds, load {os.getloadavg()[0]:.1f} (loaded: ratios)')
for p in ('qkv_proj', 'o_proj', 'gate_up_proj', 'down_proj'):
    base = np.median(cpu[(p, 32)])
    print(p, '  '.join(f'block {b}: {np.median(cpu[(p, b)]) * 1e3:.2f} ms CPU ({np.median(cpu[(p, b)]) / base:.2f})' for b in (32, 64, 128)))
