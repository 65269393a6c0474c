"""Issue #38: how far a prefill on each weight-product kernel lands from the float32 graph (the
same q4 weights, no activation quantization), over many prompts: top-1 agreement of the
last-position logits and mean KL(fp32 || variant). The served q4 graph (MatMulNBits,
accuracy_level 4 = per-32-block int8 activations) is the yardstick.

  nice /work/venv/bin/python scripts/prefill/variant-agreement.py <model_q4.inplace.onnx> <variants dir> [prompts] [tokens]
"""
import sys, os
import numpy as np
import onnxruntime as ort

served, vdir = sys.argv[1], sys.argv[2]
N = int(sys.argv[3]) if len(sys.argv) > 3 else 12
T = int(sys.argv[4]) if len(sys.argv) > 4 else 256
L, H, D, V = 30, 3, 64, 49152
so = ort.SessionOptions(); so.intra_op_num_threads = 1; so.log_severity_level = 3
paths = {'q4': served, **{v: os.path.join(vdir, f'{v}.onnx') for v in ('fp32', 'q8', 'dqmm', 'mmi-row8')}}
sessions = {k: ort.InferenceSession(p, so, providers=['CPUExecutionProvider']) for k, p in paths.items()}
rng = np.random.default_rng(7)


def last_logits(s, ids):
    feeds = {'input_ids': ids[None, :], 'attention_mask': np.ones((1, len(ids)), np.int64),
             'position_ids': np.arange(len(ids), dtype=np.int64)[None, :], 'num_logits_to_keep': np.array(1, np.int64)}
    for l in range(L):
        feeds[f'past_key_values.{l}.key'] = feeds[f'past_key_values.{l}.value'] = np.zeros((1, H, 0, D), np.float32)
    return s.run(['logits'], feeds)[0][0, -1].astype(np.float64)


def logsoftmax(x):
    x = x - x.max()
    return x - np.log(np.exp(x).sum())


stats = {k: {'top1': 0, 'kl': []} for k in sessions if k != 'fp32'}
for i in range(N):
    ids = np.concatenate([[1], rng.integers(300, V - 100, T - 1)]).astype(np.int64)
    ref = last_logits(sessions['fp32'], ids)
    lp = logsoftmax(ref)
    for k in stats:
        x = last_logits(sessions[k], ids)
        stats[k]['top1'] += int(np.argmax(x) == np.argmax(ref))
        stats[k]['kl'].append(float((np.exp(lp) * (lp - logsoftmax(x))).sum()))
print(f'{N} prompts of {T} tokens; against the float32 graph on the same q4 weights')
for k, s in stats.items():
    print(f'{k:9s} top-1 = fp32 in {s["top1"]}/{N}; mean KL {np.mean(s["kl"]):.4f}, max {np.max(s["kl"]):.4f}')
