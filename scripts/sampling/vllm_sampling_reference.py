"""
Expected logprobs of current vLLM's V1 sampler, for test/sampling/vllm-reference.test.ts.

vLLM cannot run here (no GPU build), so this follows the code path of its
vllm/v1/sample/sampler.py (Sampler.forward / sample), logits_processor/builtin.py
(MinTokens, LogitBias, MinP), model_executor/layers/utils.py (apply_penalties, with
the torch fallback of apply_repetition_penalties) and ops/topk_topp_sampler.py
(apply_top_k_top_p, apply_top_k_only) step by step in torch, float32 as vLLM runs it:

  raw logits (float32) -> raw_logprobs = log_softmax, raw_logits = a copy
  -> min_tokens (-inf on stop ids) -> logit_bias (+=) -> repetition penalty
  -> frequency penalty -> presence penalty
  greedy (temperature < 1e-5): processed = those logits
  random: / temperature -> min_p (softmax, probs < max * min_p -> -inf)
          -> top_k / top_p -> processed_logits, processed_logprobs = log_softmax

The draw itself (vLLM's exponential race on the GPU generator) is not reproduced: the
tests compare what is reported and which tokens may be drawn, not which one is.

Run: python scripts/sampling/vllm_sampling_reference.py  (torch CPU)
Writes test/fixtures/sampling/vllm-reference.json.
"""
import json
import math
import os

import torch

EPS = 1e-5
VOCAB = 48


def row(seed, scale=3.0):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(VOCAB, generator=g) * scale).to(torch.float32)


def apply_top_k_only(logits, k):
    kth = logits.topk(k, dim=1).values[:, k - 1 : k]
    return logits.masked_fill(logits < kth, -float("inf"))


def apply_top_k_top_p(logits, k, p):
    if p is None:
        return logits if k is None else apply_top_k_only(logits, k)
    logits_sort, logits_idx = logits.sort(dim=-1, descending=False)
    if k is not None:
        top_k_mask = logits_sort.size(1) - k
        top_k_mask = logits_sort.gather(1, torch.tensor([[top_k_mask]]))
        logits_sort.masked_fill_(logits_sort < top_k_mask, -float("inf"))
    probs_sort = logits_sort.softmax(dim=-1)
    probs_sum = torch.cumsum(probs_sort, dim=-1)
    top_p_mask = probs_sum <= 1 - p
    top_p_mask[:, -1] = False
    logits_sort.masked_fill_(top_p_mask, -float("inf"))
    return logits_sort.scatter(dim=-1, index=logits_idx, src=logits_sort)


def apply_min_p(logits, min_p):
    probs = torch.nn.functional.softmax(logits, dim=-1)
    max_probs = torch.amax(probs, dim=-1, keepdim=True)
    logits[probs < max_probs * min_p] = -float("inf")
    return logits


def vllm_v1(case):
    logits = torch.tensor([case["logits"]], dtype=torch.float32)
    out = {"raw_logprobs": logits.log_softmax(dim=-1, dtype=torch.float32), "raw_logits": logits.clone()}
    prompt, output = case.get("prompt", []), case.get("output", [])
    # min_tokens, then logit_bias (vLLM's non-argmax-invariant builtin processors, in that order)
    if len(output) < case.get("min_tokens", 0):
        for stop in case.get("stop_ids", []):
            logits[0, stop] = -float("inf")
    for token, bias in case.get("logit_bias", {}).items():
        logits[0, int(token)] += min(100.0, max(-100.0, bias))
    # penalties
    rep = case.get("repetition_penalty", 1.0)
    counts = torch.zeros(VOCAB, dtype=torch.long)
    for t in output:
        counts[t] += 1
    prompt_mask = torch.zeros(VOCAB, dtype=torch.bool)
    for t in prompt:
        prompt_mask[t] = True
    if rep != 1.0 or case.get("frequency_penalty", 0) or case.get("presence_penalty", 0):
        penalties = torch.where(prompt_mask | (counts > 0), torch.tensor(rep), torch.tensor(1.0))
        scaling = torch.where(logits[0] > 0, 1.0 / penalties, penalties)
        logits[0] *= scaling
        logits[0] -= case.get("frequency_penalty", 0.0) * counts
        logits[0] -= case.get("presence_penalty", 0.0) * (counts > 0)
    temperature = case.get("temperature", 1.0)
    if temperature < EPS:
        processed = logits
    else:
        logits = logits.div_(temperature)
        if case.get("min_p", 0.0):
            logits = apply_min_p(logits, case["min_p"])
        top_k = case.get("top_k", 0)
        k = top_k if 0 < top_k < VOCAB else None
        p = case.get("top_p", 1.0)
        processed = apply_top_k_top_p(logits, k, p if p < 1.0 else None)
    out["processed_logits"] = processed
    out["processed_logprobs"] = processed.log_softmax(dim=-1, dtype=torch.float32)
    out["greedy_token"] = int(processed.argmax(dim=-1))
    return out


def old_order_support(case):
    """vLLM 0.6's order (top-k, top-p, then min-p): the tokens it would keep, to show a case tells the orders apart."""
    logits = torch.tensor([case["logits"]], dtype=torch.float32) / case["temperature"]
    top_k = case.get("top_k", 0)
    logits = apply_top_k_top_p(logits, top_k if 0 < top_k < VOCAB else None, case.get("top_p", 1.0) if case.get("top_p", 1.0) < 1 else None)
    logits = apply_min_p(logits, case["min_p"])
    return [i for i in range(VOCAB) if math.isfinite(float(logits[0, i]))]


def values(t):
    return [None if not math.isfinite(float(v)) else float(v) for v in t[0]]


CASES = [
    {"name": "temperature 0.5", "logits": row(1).tolist(), "temperature": 0.5},
    {"name": "top_p 0.5", "logits": row(2, 1.5).tolist(), "temperature": 1.0, "top_p": 0.5},
    # weights 10, 6, 3 and 45 × 1: min_p 0.2 keeps the first three, after which top_p 0.6
    # keeps two; top_p first (0.6 of the whole row) would keep the three and five of the ones.
    {"name": "min_p before top_p", "logits": [math.log(10), math.log(6), math.log(3)] + [0.0] * (VOCAB - 3), "temperature": 1.0, "min_p": 0.2, "top_p": 0.6},
    {"name": "top_k 5, top_p 0.9, temperature 0.8", "logits": row(4).tolist(), "temperature": 0.8, "top_k": 5, "top_p": 0.9},
    {"name": "top_k 0 is disabled", "logits": row(5).tolist(), "temperature": 1.3, "top_k": 0},
    {"name": "greedy, penalties, logit_bias, min_tokens", "logits": row(6).tolist(), "temperature": 0.0, "prompt": [1, 2, 3], "output": [3, 3, 7],
     "repetition_penalty": 1.3, "frequency_penalty": 0.4, "presence_penalty": 0.25, "logit_bias": {"9": 2.5, "11": -100}, "min_tokens": 5, "stop_ids": [0, 4]},
    {"name": "random, penalties, logit_bias, min_p, top_k", "logits": row(7).tolist(), "temperature": 0.7, "prompt": [5], "output": [6, 6],
     "repetition_penalty": 0.8, "frequency_penalty": -0.5, "presence_penalty": 0.5, "logit_bias": {"12": 3, "13": -7}, "min_p": 0.05, "top_k": 9},
]


def main():
    out = []
    for case in CASES:
        ref = vllm_v1(case)
        entry = {"case": case, "greedy_token": ref["greedy_token"]}
        for mode in ("raw_logprobs", "raw_logits", "processed_logprobs", "processed_logits"):
            entry[mode] = values(ref[mode])
        if case["name"] == "min_p before top_p":
            entry["old_order_support"] = old_order_support(case)
        out.append(entry)
    path = os.path.join(os.path.dirname(__file__), "../../test/fixtures/sampling/vllm-reference.json")
    with open(path, "w") as f:
        json.dump({"vocab": VOCAB, "torch": torch.__version__, "cases": out}, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
