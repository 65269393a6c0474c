"""Issue #38: does a prefill on another weight-product kernel change what the q4 engine says?
For each variant graph (scripts/prefill/build-variants.py): prefill a prompt on it, then decode
greedily on the served q4 graph from its KV (what a prefill-only twin would do), and compare
the ids with the all-q4 run; and the prefill's last-position logits against the float32
graph's (the q4 weights dequantized: the same weights without activation quantization).

  nice /work/venv/bin/python scripts/prefill/variant-greedy.py <served model_q4.inplace.onnx> <variants dir> [prompt tokens] [new tokens]
"""
import sys, os
import numpy as np
import onnxruntime as ort

served, vdir = sys.argv[1], sys.argv[2]
T = int(sys.argv[3]) if len(sys.argv) > 3 else 808
NEW = int(sys.argv[4]) if len(sys.argv) > 4 else 32
L, H, D, V = 30, 3, 64, 49152
so = ort.SessionOptions(); so.intra_op_num_threads = 1; so.log_severity_level = 3
sess = lambda p: ort.InferenceSession(p, so, providers=['CPUExecutionProvider'])
rng = np.random.default_rng(38)
prompt = np.concatenate([[1], rng.integers(300, V - 100, T - 1)]).astype(np.int64)


def step(s, ids, past):
    """past: list of (k, v) [1, H, P, D]; returns logits of the last position and the new KV appended."""
    P = past[0][0].shape[2]
    n = len(ids)
    feeds = {'input_ids': ids[None, :], 'attention_mask': np.ones((1, P + n), np.int64),
             'position_ids': np.arange(P, P + n, dtype=np.int64)[None, :], 'num_logits_to_keep': np.array(1, np.int64)}
    for l in range(L):
        feeds[f'past_key_values.{l}.key'], feeds[f'past_key_values.{l}.value'] = past[l]
    logits, new = s.run(['logits', 'new_key_values'], feeds)
    kv = [(np.concatenate([past[l][0], new[2 * l][None]], 2), np.concatenate([past[l][1], new[2 * l + 1][None]], 2)) for l in range(L)]
    return logits[0, -1], kv


empty = [(np.zeros((1, H, 0, D), np.float32),) * 2 for _ in range(L)]
q4 = sess(served)


def run(prefill):
    logits, kv = step(prefill, prompt, empty)
    first = logits.copy()
    ids = []
    for _ in range(NEW):
        t = int(np.argmax(logits)); ids.append(t)
        logits, kv = step(q4, np.array([t], np.int64), kv)
    return first, ids


ref_logits, ref_ids = run(q4)
fp32_logits, _ = run(sess(os.path.join(vdir, 'fp32.onnx')))
print(f'prompt {T} tokens, {NEW} greedy tokens decoded on q4')
print(f'q4: last-position logits max|Δ| vs fp32 {np.abs(ref_logits - fp32_logits).max():.4f}, top-2 margin {np.sort(ref_logits)[-1] - np.sort(ref_logits)[-2]:.4f}')
for v in sys.argv[5].split(',') if len(sys.argv) > 5 else ('fp32', 'dqmm', 'mmi-row8', 'q8'):
    logits, ids = run(sess(os.path.join(vdir, f'{v}.onnx')))
    same = next((i for i, (a, b) in enumerate(zip(ids, ref_ids)) if a != b), None)
    print(f'{v}: logits max|Δ| vs fp32 {np.abs(logits - fp32_logits).max():.4f} vs q4 {np.abs(logits - ref_logits).max():.4f}; '
          f'greedy {"= q4" if same is None else f"parts from q4 at token {same}"}')
