#!/usr/bin/env python3
"""
Builds the PEFT reference fixtures of test/fixtures/peft/: LoRA adapters made and saved by
PEFT itself on the embedded model's weights, and what PEFT and transformers generate with them.

    python3 -m venv /work/venvs/peft && /work/venvs/peft/bin/pip install torch transformers peft
    /work/venvs/peft/bin/python scripts/adapters/build_peft_references.py

The base model is stories260K (the llama2.c checkpoint models/stories260k/ was converted from),
loaded into transformers' LlamaForCausalLM with q/k rows permuted to Hugging Face's rotate-half
order (as transformers' convert_llama_weights_to_hf.py does). The script checks that
transformers' greedy output on it equals the committed golden output of the llama2.c
reference, so the weights PEFT adapts are the weights the server serves.

Each adapter is `get_peft_model(model, LoraConfig(...))` with its LoRA weights set to seeded
uniform values (PEFT initialises lora_B to zeros, which would make every adapter the base
model), saved by `save_pretrained` (adapter_config.json + adapter_model.safetensors). The
reference per adapter: the PeftModel's greedy ids (transformers' generate), the ids and text of
the merged model (`merge_and_unload`), and the merged model's logits for the prompt's last
position. Adapters the server must refuse (DoRA, modules_to_save, other PEFT types) are saved
the same way with the reason's keyword recorded.
"""
import json
import os
import shutil
import struct

import numpy as np
import torch
from peft import IA3Config, LoHaConfig, LoKrConfig, LoraConfig, get_peft_model
from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..')
# The committed copy of the stories260K checkpoint (test/fixtures/stories260K, MIT).
CHECKPOINT = os.environ.get('STORIES260K', os.path.join(ROOT, 'test', 'fixtures', 'stories260K', 'stories260K.bin'))
OUT = os.path.join(ROOT, 'test', 'fixtures', 'peft')
MAX_NEW_TOKENS = 20
torch.set_num_threads(1)


def read_llama2c(path):
    with open(path, 'rb') as f:
        data = f.read()
    dim, hidden, layers, heads, kv_heads, vocab, seq_len = struct.unpack('7i', data[:28])
    shared = vocab > 0
    vocab = abs(vocab)
    floats = np.frombuffer(data, dtype=np.float32, offset=28)
    at = 0

    def take(*shape):
        nonlocal at
        count = int(np.prod(shape))
        out = floats[at:at + count].reshape(shape).copy()
        at += count
        return out

    head_dim = dim // heads
    kv_dim = kv_heads * head_dim
    w = {'embed': take(vocab, dim), 'rms_att': take(layers, dim), 'wq': take(layers, dim, dim),
         'wk': take(layers, kv_dim, dim), 'wv': take(layers, kv_dim, dim), 'wo': take(layers, dim, dim),
         'rms_ffn': take(layers, dim), 'w1': take(layers, hidden, dim), 'w2': take(layers, dim, hidden),
         'w3': take(layers, hidden, dim), 'rms_final': take(dim)}
    take(seq_len, head_dim // 2)
    take(seq_len, head_dim // 2)
    if not shared:
        w['cls'] = take(vocab, dim)
    return dict(dim=dim, hidden=hidden, layers=layers, heads=heads, kv_heads=kv_heads, vocab=vocab, seq_len=seq_len, shared=shared), w


def permute_for_hf(w, n_heads, dim1, dim2):
    return w.reshape(n_heads, dim1 // n_heads // 2, 2, dim2).transpose(0, 2, 1, 3).reshape(dim1, dim2)


def base_model():
    h, w = read_llama2c(CHECKPOINT)
    config = LlamaConfig(hidden_size=h['dim'], intermediate_size=h['hidden'], num_hidden_layers=h['layers'],
                         num_attention_heads=h['heads'], num_key_value_heads=h['kv_heads'], head_dim=h['dim'] // h['heads'],
                         vocab_size=h['vocab'], max_position_embeddings=h['seq_len'], rms_norm_eps=1e-5, rope_theta=10000.0,
                         tie_word_embeddings=h['shared'], bos_token_id=1, eos_token_id=2, attention_bias=False, mlp_bias=False)
    model = LlamaForCausalLM(config)
    kv_dim = h['kv_heads'] * (h['dim'] // h['heads'])
    state = {'model.embed_tokens.weight': w['embed'], 'model.norm.weight': w['rms_final']}
    for i in range(h['layers']):
        p = f'model.layers.{i}.'
        state[p + 'input_layernorm.weight'] = w['rms_att'][i]
        state[p + 'post_attention_layernorm.weight'] = w['rms_ffn'][i]
        state[p + 'self_attn.q_proj.weight'] = permute_for_hf(w['wq'][i], h['heads'], h['dim'], h['dim'])
        state[p + 'self_attn.k_proj.weight'] = permute_for_hf(w['wk'][i], h['kv_heads'], kv_dim, h['dim'])
        state[p + 'self_attn.v_proj.weight'] = w['wv'][i]
        state[p + 'self_attn.o_proj.weight'] = w['wo'][i]
        state[p + 'mlp.gate_proj.weight'] = w['w1'][i]
        state[p + 'mlp.down_proj.weight'] = w['w2'][i]
        state[p + 'mlp.up_proj.weight'] = w['w3'][i]
    if not h['shared']:
        state['lm_head.weight'] = w['cls']
    missing, unexpected = model.load_state_dict({k: torch.from_numpy(np.ascontiguousarray(v)) for k, v in state.items()}, strict=False)
    assert not unexpected and all(k == 'lm_head.weight' for k in missing), (missing, unexpected)
    if h['shared']:
        model.tie_weights()
    return model.eval()


def greedy(model, prompt_ids):
    with torch.no_grad():
        out = model.generate(torch.tensor([prompt_ids]), max_new_tokens=MAX_NEW_TOKENS, do_sample=False,
                             attention_mask=torch.ones(1, len(prompt_ids), dtype=torch.long),
                             eos_token_id=None, pad_token_id=0)
    return out[0, len(prompt_ids):].tolist()


def randomise_lora(peft_model, seed):
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, param in sorted(peft_model.named_parameters()):
            if 'lora_' in name or 'hada_' in name or 'lokr_' in name or 'ia3_' in name:
                param.copy_((torch.rand(param.shape, generator=generator) * 2 - 1) * 0.2)


# name, PEFT config, prompt key; `refused` holds the keyword the server's refusal must name.
PROMPTS = {'story': 'Once upon a time', 'tom': 'Tom had a big dog. The dog'}
CASES = [
    ('default-q-v', LoraConfig(r=8, lora_alpha=16, task_type='CAUSAL_LM'), 'story'),
    ('q', LoraConfig(r=4, lora_alpha=32, target_modules=['q_proj']), 'story'),
    ('k', LoraConfig(r=4, lora_alpha=32, target_modules=['k_proj']), 'story'),
    ('v', LoraConfig(r=4, lora_alpha=8, target_modules=['v_proj']), 'story'),
    ('q-k', LoraConfig(r=4, lora_alpha=16, target_modules=['q_proj', 'k_proj']), 'story'),
    ('k-v', LoraConfig(r=4, lora_alpha=8, target_modules=['k_proj', 'v_proj']), 'tom'),
    ('q-k-v', LoraConfig(r=4, lora_alpha=8, target_modules=['q_proj', 'k_proj', 'v_proj']), 'story'),
    ('gate', LoraConfig(r=4, lora_alpha=8, target_modules=['gate_proj']), 'story'),
    ('up', LoraConfig(r=4, lora_alpha=8, target_modules=['up_proj']), 'story'),
    ('gate-up', LoraConfig(r=4, lora_alpha=8, target_modules=['gate_proj', 'up_proj']), 'story'),
    ('o-down', LoraConfig(r=4, lora_alpha=8, target_modules=['o_proj', 'down_proj']), 'tom'),
    ('q-v-gate-up-down', LoraConfig(r=4, lora_alpha=8, target_modules=['q_proj', 'v_proj', 'gate_proj', 'up_proj', 'down_proj']), 'tom'),
    ('all-linear', LoraConfig(r=8, lora_alpha=16, target_modules='all-linear'), 'story'),
    ('regex-attention', LoraConfig(r=4, lora_alpha=8, target_modules=r'.*\.self_attn\.(q|v)_proj'), 'tom'),
    ('rank-alpha-pattern', LoraConfig(r=8, lora_alpha=16, target_modules=['q_proj', 'k_proj', 'v_proj', 'gate_proj', 'up_proj'],
                                      rank_pattern={'k_proj': 2, 'layers.1.mlp.up_proj': 4}, alpha_pattern={'v_proj': 32, 'gate_proj': 4}), 'story'),
    ('rslora', LoraConfig(r=16, lora_alpha=8, use_rslora=True, target_modules=['q_proj', 'v_proj', 'up_proj', 'gate_proj']), 'tom'),
    ('layers-to-transform', LoraConfig(r=4, lora_alpha=8, target_modules=['q_proj', 'v_proj'], layers_to_transform=[0, 3]), 'story'),
]
REFUSED = [
    ('dora', LoraConfig(r=4, lora_alpha=8, target_modules=['q_proj', 'v_proj'], use_dora=True), 'use_dora'),
    ('modules-to-save', LoraConfig(r=4, lora_alpha=8, target_modules=['q_proj', 'v_proj'], modules_to_save=['lm_head']), 'modules_to_save'),
    ('lora-bias', LoraConfig(r=4, lora_alpha=8, target_modules=['q_proj', 'v_proj'], lora_bias=True), 'lora_bias'),
    ('trainable-tokens', LoraConfig(r=4, lora_alpha=8, target_modules=['q_proj', 'v_proj'], trainable_token_indices=[5, 6]), 'trainable_token_indices'),
    ('alora', LoraConfig(r=4, lora_alpha=8, target_modules=['q_proj', 'v_proj'], alora_invocation_tokens=[403, 407]), 'alora_invocation_tokens'),
    ('loha', LoHaConfig(r=4, alpha=8, target_modules=['q_proj', 'v_proj']), 'LOHA'),
    ('lokr', LoKrConfig(r=4, alpha=8, target_modules=['q_proj', 'v_proj']), 'LOKR'),
    ('ia3', IA3Config(target_modules=['k_proj', 'v_proj', 'down_proj'], feedforward_modules=['down_proj']), 'IA3'),
]


def save(model, name):
    model.save_pretrained(os.path.join(OUT, name))
    # PEFT's generated model card says nothing about these fixtures.
    os.remove(os.path.join(OUT, name, 'README.md'))


def main():
    tokenizer = AutoTokenizer.from_pretrained(os.path.join(ROOT, 'models', 'stories260k'))
    with open(os.path.join(ROOT, 'test', 'fixtures', 'golden-greedy.json')) as f:
        golden = json.load(f)
    prompt_ids = {key: tokenizer(text)['input_ids'] for key, text in PROMPTS.items()}
    assert prompt_ids['story'] == golden['prompt_ids'], prompt_ids['story']

    def text_of(prompt, ids):
        return tokenizer.decode(prompt_ids[prompt] + ids, skip_special_tokens=True)[len(tokenizer.decode(prompt_ids[prompt], skip_special_tokens=True)):]

    base = base_model()
    base_ids = {key: greedy(base, ids) for key, ids in prompt_ids.items()}
    # The weights PEFT adapts are the served weights: transformers reproduces the llama2.c golden output.
    assert base_ids['story'] == golden['completion_ids'][:MAX_NEW_TOKENS], base_ids['story']

    shutil.rmtree(OUT, ignore_errors=True)
    os.makedirs(OUT)
    reference = {'prompts': {key: {'text': PROMPTS[key], 'ids': ids} for key, ids in prompt_ids.items()},
                 'max_tokens': MAX_NEW_TOKENS,
                 'base': {key: {'ids': base_ids[key], 'text': text_of(key, base_ids[key])} for key in PROMPTS},
                 'adapters': {}, 'refused': {}}
    for index, (name, config, prompt) in enumerate(CASES):
        model = get_peft_model(base_model(), config)
        randomise_lora(model, 1000 + index)
        model.eval()
        save(model, name)
        ids = greedy(model, prompt_ids[prompt])
        merged = model.merge_and_unload()
        merged_ids = greedy(merged, prompt_ids[prompt])
        assert merged_ids == ids, (name, ids, merged_ids)
        assert ids != base_ids[prompt], f'{name}: the adapter does not change the greedy output'
        with torch.no_grad():
            logits = merged(torch.tensor([prompt_ids[prompt]])).logits[0]
        reference['adapters'][name] = {
            'prompt': prompt, 'ids': ids, 'text': text_of(prompt, ids),
            'merged_last_logits': [round(float(x), 6) for x in logits[-1]],
        }
        print(name, ids[:8], repr(reference['adapters'][name]['text'][:40]))
    for name, config, keyword in REFUSED:
        model = get_peft_model(base_model(), config)
        randomise_lora(model, 2000)
        save(model, name)
        reference['refused'][name] = keyword
    with open(os.path.join(OUT, 'reference.json'), 'w') as f:
        json.dump(reference, f, indent=1)
        f.write('\n')
    import peft
    import transformers
    with open(os.path.join(OUT, 'VERSIONS'), 'w') as f:
        f.write(f'peft {peft.__version__}\ntransformers {transformers.__version__}\ntorch {torch.__version__}\n')


if __name__ == '__main__':
    main()
