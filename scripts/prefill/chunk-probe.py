"""Issue #38: does the served q4 graph prefill 808 tokens faster in one call or in chunks
(each chunk a call on the previous chunks' KV, as the engine's prefix reuse / chunked prefill
run it)? Interleaved rounds, process CPU time and wall, onnxruntime 1.30 (the build
onnxruntime-node ships), intra-op threads as given.

  nice /work/venv/bin/python scripts/prefill/chunk-probe.py <model_q4.inplace.onnx> [threads] [rounds] [chunk sizes...]
"""
import sys, time, os
import numpy as np
import onnxruntime as ort

path = sys.argv[1]
threads = int(sys.argv[2]) if len(sys.argv) > 2 else 1
ROUNDS = int(sys.argv[3]) if len(sys.argv) > 3 else 5
CHUNKS = [int(c) for c in sys.argv[4:]] or [808, 404, 202, 128, 64]
T, L, H, D, V = 808, 30, 3, 64, 49152
so = ort.SessionOptions(); so.intra_op_num_threads = threads; so.log_severity_level = 3
so.add_session_config_entry('session.intra_op.allow_spinning', '0')
s = ort.InferenceSession(path, so, providers=['CPUExecutionProvider'])
rng = np.random.default_rng(38)
prompt = np.concatenate([[1], rng.integers(300, V - 100, T - 1)]).astype(np.int64)


def prefill(chunk):
    kv = [(np.zeros((1, H, 0, D), np.float32),) * 2 for _ in range(L)]
    for start in range(0, T, chunk):
        ids = prompt[start:start + chunk]
        P, n = start, len(ids)
        feeds = {'input_ids': ids[None, :], 'attention_mask': np.ones((1, P + n), np.int64),
                 'position_ids': np.arange(P, P + n, dtype=np.int64)[None, :], 'num_logits_to_keep': np.array(1, np.int64)}
        for l in range(L):
            feeds[f'past_key_values.{l}.key'], feeds[f'past_key_values.{l}.value'] = kv[l]
        logits, new = s.run(['logits', 'new_key_values'], feeds)
        kv = [(np.concatenate([kv[l][0], new[2 * l][None]], 2), np.concatenate([kv[l][1], new[2 * l + 1][None]], 2)) for l in range(L)]
    return logits[0, -1]


ref = prefill(T)
for c in CHUNKS:
    d = np.abs(prefill(c) - ref).max()
    print(f'chunk {c}: last logits max|Δ| vs one call {d:.2e}')
wall = {c: [] for c in CHUNKS}; cpu = {c: [] for c in CHUNKS}
for r in range(ROUNDS):
    for c in CHUNKS[r % len(CHUNKS):] + CHUNKS[:r % len(CHUNKS)]:
        c0 = time.process_time(); t0 = time.perf_counter()
        prefill(c)
        wall[c].append(time.perf_counter() - t0); cpu[c].append(time.process_time() - c0)
print(f'{T}-token cold prefill, {threads} thread(s), {ROUNDS} rounds, load {os.getloadavg()[0]:.1f} (loaded machine: ratios)')
for c in CHUNKS:
    print(f'chunks of {c:4d}: wall {np.median(wall[c]) * 1e3:7.1f} ms  cpu {np.median(cpu[c]) * 1e3:7.1f} ms  cpu ÷ one call {np.median(cpu[c]) / np.median(cpu[T]):.2f}  wall ÷ {np.median(wall[c]) / np.median(wall[T]):.2f}')
