"""Issue #38: one layer's attention at a cold prefill of S tokens (135M shape: 9 query heads,
3 KV heads, head dim 64), our unfused form against onnxruntime's fused ops, built here and
timed interleaved in onnxruntime (Python, same 1.30 build as onnxruntime-node), one thread.

  nice /work/venv/bin/python scripts/prefill/attention-probe.py [S] [rounds]

unfused: the in-place graph's prefill form (queries grouped per KV head [1, 3, 3*S, 64],
  scores over the fed keys + an additive causal bias, Softmax, times values), rotary done before;
gqa:     com.microsoft GroupQueryAttention (packed q/k/v [1, S, *], no past, causal inside);
mha:     com.microsoft MultiHeadAttention, keys/values repeated to 9 heads, unidirectional.
Outputs are checked equal (within 1e-4) before timing.
"""
import sys, time, resource
import numpy as np
import onnx
import onnxruntime as ort
from onnx import helper, TensorProto as T

S = int(sys.argv[1]) if len(sys.argv) > 1 else 808
ROUNDS = int(sys.argv[2]) if len(sys.argv) > 2 else 15
H, KV, D = 9, 3, 64
G = H // KV
f = lambda n, shape: helper.make_tensor_value_info(n, T.FLOAT, shape)
model = lambda nodes, ins, outs, inits=(): helper.make_model(helper.make_graph(nodes, 'a', ins, outs, list(inits)),
    opset_imports=[helper.make_opsetid('', 17), helper.make_opsetid('com.microsoft', 1)], ir_version=8)
c64 = lambda name, v: helper.make_tensor(name, T.INT64, [len(v)], v)

# unfused: inputs q [1, S, 576], k/v [1, S, 192], bias [S*G... broadcast [1,1,G*S,S]]
unfused = model([
    helper.make_node('Reshape', ['q', 'qs'], ['q4']),                        # [1, S, 3, 3, 64]  (kv, group)
    helper.make_node('Transpose', ['q4'], ['qt'], perm=[0, 2, 3, 1, 4]),     # [1, 3, 3, S, 64]
    helper.make_node('Reshape', ['qt', 'qg'], ['qgr']),                      # [1, 3, 3S, 64]
    helper.make_node('Reshape', ['k', 'ks'], ['k4']),
    helper.make_node('Transpose', ['k4'], ['kt'], perm=[0, 2, 3, 1]),        # [1, 3, 64, S]
    helper.make_node('Reshape', ['v', 'ks'], ['v4']),
    helper.make_node('Transpose', ['v4'], ['vt'], perm=[0, 2, 1, 3]),        # [1, 3, S, 64]
    helper.make_node('MatMul', ['qgr', 'kt'], ['sc']),
    helper.make_node('Add', ['sc', 'bias'], ['scb']),
    helper.make_node('Softmax', ['scb'], ['p'], axis=-1),
    helper.make_node('MatMul', ['p', 'vt'], ['o']),                          # [1, 3, 3S, 64]
    helper.make_node('Reshape', ['o', 'os'], ['o5']),
    helper.make_node('Transpose', ['o5'], ['ot'], perm=[0, 3, 1, 2, 4]),
    helper.make_node('Reshape', ['ot', 'out_shape'], ['y']),
], [f('q', [1, S, H * D]), f('k', [1, S, KV * D]), f('v', [1, S, KV * D]), f('bias', [1, 1, G * S, S])], [f('y', [1, S, H * D])],
   [c64('qs', [1, S, KV, G, D]), c64('qg', [1, KV, G * S, D]), c64('ks', [1, S, KV, D]), c64('os', [1, KV, G, S, D]), c64('out_shape', [1, S, H * D])])
gqa = model([helper.make_node('GroupQueryAttention', ['q', 'k', 'v', '', '', 'seqlens_k', 'total_len'], ['y', 'pk', 'pv'],
                              domain='com.microsoft', num_heads=H, kv_num_heads=KV, scale=1.0)],
            [f('q', [1, S, H * D]), f('k', [1, S, KV * D]), f('v', [1, S, KV * D]),
             helper.make_tensor_value_info('seqlens_k', T.INT32, [1]), helper.make_tensor_value_info('total_len', T.INT32, [])],
            [f('y', [1, S, H * D])])
mha = model([
    helper.make_node('Reshape', ['k', 'ks'], ['k4']), helper.make_node('Tile', ['k4', 'rep'], ['kr']), helper.make_node('Reshape', ['kr', 'qs9'], ['k9']),
    helper.make_node('Reshape', ['v', 'ks'], ['v4']), helper.make_node('Tile', ['v4', 'rep'], ['vr']), helper.make_node('Reshape', ['vr', 'qs9'], ['v9']),
    helper.make_node('MultiHeadAttention', ['q', 'k9', 'v9'], ['y'], domain='com.microsoft', num_heads=H, scale=1.0, unidirectional=1),
], [f('q', [1, S, H * D]), f('k', [1, S, KV * D]), f('v', [1, S, KV * D])], [f('y', [1, S, H * D])],
   [c64('ks', [1, S, KV, 1, D]), c64('rep', [1, 1, 1, G, 1]), c64('qs9', [1, S, H * D])])

rng = np.random.default_rng(0)
q = rng.standard_normal((1, S, H * D), np.float32) * 0.3
k = rng.standard_normal((1, S, KV * D), np.float32) * 0.3
v = rng.standard_normal((1, S, KV * D), np.float32)
causal = np.triu(np.full((S, S), -np.inf, np.float32), 1)
bias = np.tile(causal, (G, 1))[None, None]
so = ort.SessionOptions(); so.intra_op_num_threads = 1; so.log_severity_level = 3
cases = {}
for name, m, feeds in [('unfused', unfused, {'q': q, 'k': k, 'v': v, 'bias': bias}),
                       ('gqa', gqa, {'q': q, 'k': k, 'v': v, 'seqlens_k': np.array([S - 1], np.int32), 'total_len': np.array(S, np.int32)}),
                       ('mha', mha, {'q': q, 'k': k, 'v': v})]:
    try:
        s = ort.InferenceSession(m.SerializeToString(), so, providers=['CPUExecutionProvider'])
        cases[name] = (s, feeds, s.run(['y'], feeds)[0])
    except Exception as e:
        print(name, 'cannot run:', str(e).splitlines()[0][:200])
ref = cases['unfused'][2]
for name, (_, _, y) in cases.items():
    print(f'{name}: max|Δ| vs unfused {np.abs(y - ref).max():.2e}')
times = {n: [] for n in cases}
cpu = {n: [] for n in cases}
for r in range(ROUNDS):
    for n in list(cases)[r % len(cases):] + list(cases)[:r % len(cases)]:
        s, feeds, _ = cases[n]
        c0 = time.process_time(); t0 = time.perf_counter()
        s.run(['y'], feeds)
        times[n].append(time.perf_counter() - t0); cpu[n].append(time.process_time() - c0)
base = np.median(cpu['unfused'])
import os
print(f'S={S}, one thread, {ROUNDS} rounds, load {os.getloadavg()[0]:.1f} (loaded machine: ratios)')
for n in cases:
    print(f'{n:8s} wall {np.median(times[n]) * 1e3:7.2f} ms  cpu {np.median(cpu[n]) * 1e3:7.2f} ms  cpu ÷ unfused {np.median(cpu[n]) / base:.2f}')
