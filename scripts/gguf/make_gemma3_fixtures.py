"""
Makes the `gemma3` GGUF test fixtures (committed under test/fixtures/gguf/) the way real
Gemma 3 text GGUF files are made: a seeded random-weight transformers Gemma3ForCausalLM
(Gemma3TextConfig) with the SentencePiece vocabulary of make_gemma2_fixtures.py, saved as a
Hugging Face folder and converted by llama.cpp's own convert_hf_to_gguf.py (which adds 1 to
every RMSNorm weight, q_norm and k_norm included, writes the global layers' rope base and
their linear rope scaling, the sliding window, and no rope base for the sliding layers:
llama.cpp takes 10000 for those).

- tiny-gemma3.gguf: F32 (--outtype f32);
- tiny-gemma3-q8_0.gguf: the same model with its matrices in Q8_0 (--outtype q8_0);
- tiny-gemma3-reference.json: transformers' (eager attention) logits at every position of a
  few greedy generations, the greedy ids, each step's margin, and how far the logits move
  when each Gemma 3 feature is taken away (so the test knows the reference exercises it).

Model: 7 layers (Gemma 3's pattern of 6: five sliding-window layers, one global, then a
sliding one again), hidden 64, 4 query heads of 32 (q is 128 wide), 2 key-value heads,
GELU-tanh MLP of 128, tied head, per-head q/k RMSNorms, four RMSNorms a layer, a sliding
window of 16 positions, rope base 10000 on the sliding layers and 1e6 with linear scaling x8
on the global ones (gemma-3-4b's values), query_pre_attn_scalar = head_dim, no soft-capping
(Gemma 3 has none), Gemma 3's chat template (google/gemma-3-*-it).

Well conditioned: SEED is chosen (`--search N`) so that every greedy step of the reference
generations and of the prompts the HTTP tests send has a best-vs-second margin >= MIN_MARGIN.

Usage: /work/venv/bin/python scripts/gguf/make_gemma3_fixtures.py [--search N [--from SEED]]
"""
import json
import os
import sys
import tempfile

import jinja2
import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_gemma2_fixtures import (HTTP_MAX_TOKENS, HTTP_PROMPTS, OUT, REFERENCE_NEW_TOKENS, REFERENCE_PROMPTS, TURN_TOKENS,
                                  conversations, convert, greedy, train_tokenizer, with_specials)
from transformers import Gemma3ForCausalLM, Gemma3TextConfig

SEED = 14  # the best of `--search 48`: smallest margin 0.041
MIN_MARGIN = 0.04

# google/gemma-3-*-it's template.
CHAT_TEMPLATE = """{{ bos_token }}
{%- if messages[0]['role'] == 'system' -%}
    {%- if messages[0]['content'] is string -%}
        {%- set first_user_prefix = messages[0]['content'] + '\n\n' -%}
    {%- else -%}
        {%- set first_user_prefix = messages[0]['content'][0]['text'] + '\n\n' -%}
    {%- endif -%}
    {%- set loop_messages = messages[1:] -%}
{%- else -%}
    {%- set first_user_prefix = "" -%}
    {%- set loop_messages = messages -%}
{%- endif -%}
{%- for message in loop_messages -%}
    {%- if (message['role'] == 'user') != (loop.index0 % 2 == 0) -%}
        {{ raise_exception("Conversation roles must alternate user/assistant/user/assistant/...") }}
    {%- endif -%}
    {%- if (message['role'] == 'assistant') -%}
        {%- set role = "model" -%}
    {%- else -%}
        {%- set role = message['role'] -%}
    {%- endif -%}
    {{ '<start_of_turn>' + role + '\n' + (first_user_prefix if loop.first else "") }}
    {%- if message['content'] is string -%}
        {{ message['content'] | trim }}
    {%- elif message['content'] is iterable -%}
        {%- for item in message['content'] -%}
            {%- if item['type'] == 'image' -%}
                {{ '<start_of_image>' }}
            {%- elif item['type'] == 'text' -%}
                {{ item['text'] | trim }}
            {%- endif -%}
        {%- endfor -%}
    {%- else -%}
        {{ raise_exception("Invalid content type") }}
    {%- endif -%}
    {{ '<end_of_turn>\n' }}
{%- endfor -%}
{%- if add_generation_prompt -%}
    {{'<start_of_turn>model\n'}}
{%- endif -%}
"""

DIMS = dict(hidden_size=64, intermediate_size=128, num_hidden_layers=7, num_attention_heads=4, num_key_value_heads=2,
            head_dim=32, max_position_embeddings=512, sliding_window=16)
ROPE = {'sliding_attention': {'rope_type': 'default', 'rope_theta': 10000.0},
        'full_attention': {'rope_type': 'linear', 'factor': 8.0, 'rope_theta': 1000000.0}}


def config_of(vocab, **changes):
    fields = dict(vocab_size=vocab, **DIMS, query_pre_attn_scalar=DIMS['head_dim'], rms_norm_eps=1e-6, rope_parameters=ROPE,
                  hidden_activation='gelu_pytorch_tanh', tie_word_embeddings=True, pad_token_id=0, eos_token_id=1, bos_token_id=2,
                  attn_implementation='eager', final_logit_softcapping=None, attn_logit_softcapping=None)
    fields.update(changes)
    return Gemma3TextConfig(**fields)


def make_model(sp, seed):
    vocab = sp.vocab_size()
    torch.manual_seed(seed)
    model = Gemma3ForCausalLM(config_of(vocab)).eval()
    generator = torch.Generator().manual_seed(seed)
    normal = lambda shape, std: torch.randn(shape, generator=generator) * std
    with torch.no_grad():
        for name, param in model.named_parameters():
            if name == 'model.norm.weight':
                # Small embedding rows (below) keep a token's own row from dominating the
                # residual stream (text that repeats one token); a final norm of about 10
                # spreads the tied head's logits again (std ~5).
                param.copy_(9 + normal(param.shape, 0.1))  # transformers multiplies by (1 + w)
            elif name.endswith(('q_norm.weight', 'k_norm.weight')):
                # Heads normed to RMS 1 give flat attention (and text that repeats one token):
                # q and k norms of about 2.5 make it peaked, as trained Gemma 3 norms do.
                param.copy_(1.5 + normal(param.shape, 0.1))
            elif name.endswith('norm.weight'):
                param.copy_(normal(param.shape, 0.1))
            elif 'embed_tokens' in name:
                # Byte and special pieces get small rows (whole UTF-8 text, rare control tokens).
                rows = torch.ones(vocab)
                for i in range(vocab):
                    if sp.is_byte(i) or sp.is_control(i) or sp.is_unknown(i) or sp.id_to_piece(i) in TURN_TOKENS:
                        rows[i] = 0.05
                param.copy_(normal(param.shape, 0.06) * rows[:, None])
            elif 'q_proj' in name or 'k_proj' in name:
                param.copy_(normal(param.shape, 0.35))
            else:
                param.copy_(normal(param.shape, 0.15))
    return model


def variant(model, sp, **changes):
    """The same weights under another config (rope, window): a new model, the state dict loaded."""
    other = Gemma3ForCausalLM(config_of(sp.vocab_size(), **changes)).eval()
    other.load_state_dict(model.state_dict())
    return other


def chat_ids(sp, messages):
    rendered = jinja2.Environment().from_string(CHAT_TEMPLATE).render(messages=messages, bos_token='<bos>', add_generation_prompt=True)
    return with_specials(sp, rendered)


def scenarios(sp):
    for prompt in REFERENCE_PROMPTS:
        yield 'reference', prompt, [sp.bos_id()] + sp.encode(prompt), REFERENCE_NEW_TOKENS
    for prompt in HTTP_PROMPTS:
        yield 'completion', prompt, [sp.bos_id()] + sp.encode(prompt), HTTP_MAX_TOKENS
        for messages in conversations(prompt) + [[{'role': 'system', 'content': 'Answer briefly.'}, {'role': 'user', 'content': prompt}]]:
            yield 'chat', prompt, chat_ids(sp, messages), HTTP_MAX_TOKENS


def min_margin(model, sp):
    """The smallest best-vs-second gap over every greedy step the tests take; 0 when a generation repeats one token."""
    stops = {sp.eos_id(), sp.piece_to_id('<end_of_turn>')}
    worst = float('inf')
    with torch.no_grad():
        for _, _, ids, steps in scenarios(sp):
            out = model.generate(torch.tensor([ids]), max_new_tokens=steps, do_sample=False, output_logits=True,
                                 return_dict_in_generate=True, pad_token_id=0, eos_token_id=None)
            if len(set(out.sequences[0, len(ids):].tolist())) < 4:
                return 0.0
            for logits, token in zip(out.logits, out.sequences[0, len(ids):].tolist()):
                top2 = torch.topk(logits[0].float(), 2).values
                worst = min(worst, float(top2[0] - top2[1]))
                if token in stops:
                    break
    return worst


def write_hf_folder(model, sp, folder):
    model.save_pretrained(folder, safe_serialization=True)
    special = {i: sp.id_to_piece(i) for i in range(4)}
    special.update({sp.piece_to_id(t): t for t in TURN_TOKENS})
    with open(os.path.join(folder, 'tokenizer_config.json'), 'w') as f:
        json.dump({
            'add_bos_token': True, 'add_eos_token': False, 'bos_token': '<bos>', 'eos_token': '<eos>', 'pad_token': '<pad>',
            'unk_token': '<unk>', 'chat_template': CHAT_TEMPLATE, 'tokenizer_class': 'GemmaTokenizer',
            'added_tokens_decoder': {str(i): {'content': t, 'special': True, 'lstrip': False, 'rstrip': False,
                                              'normalized': False, 'single_word': False} for i, t in special.items()},
        }, f, indent=2)


def logit_change(model, other, ids):
    with torch.no_grad():
        return round(float((other(ids).logits - model(ids).logits).abs().max()), 5)


def main():
    with tempfile.TemporaryDirectory() as folder:
        sp = train_tokenizer(folder)
        if '--search' in sys.argv:
            count = int(sys.argv[sys.argv.index('--search') + 1])
            first = int(sys.argv[sys.argv.index('--from') + 1]) if '--from' in sys.argv else 0
            found = []
            for seed in range(first, first + count):
                found.append((min_margin(make_model(sp, seed), sp), seed))
                print(f'seed {seed}: smallest greedy margin {found[-1][0]:.4f}', flush=True)
            print('best:', max(found))
            return
        model = make_model(sp, SEED)
        worst = min_margin(model, sp)
        assert worst >= MIN_MARGIN, f'seed {SEED}: smallest margin {worst} < {MIN_MARGIN}'
        write_hf_folder(model, sp, folder)
        convert(folder, os.path.join(OUT, 'tiny-gemma3.gguf'), 'f32')
        convert(folder, os.path.join(OUT, 'tiny-gemma3-q8_0.gguf'), 'q8_0')
        reference = {'seed': SEED, 'smallest_http_margin': round(worst, 5), 'generations': []}
        for kind, prompt, ids, steps in scenarios(sp):
            if kind != 'reference':
                continue
            new, logits, margins = greedy(model, ids, steps)
            reference['generations'].append({
                'prompt': prompt, 'prompt_ids': ids, 'greedy_ids': new,
                'margins': [round(float(m), 5) for m in margins],
                'logits': [[float(f'{v:.6g}') for v in row] for row in logits[:len(ids) + len(new) - 1]],
            })
        # Each Gemma 3 feature must show: the same weights without it give other logits.
        first = reference['generations'][0]
        ids = torch.tensor([first['prompt_ids'] + first['greedy_ids']])
        global_rope = ROPE['full_attention']
        changes = {
            'without_sliding_window': variant(model, sp, sliding_window=10 ** 6),
            'with_the_global_rope_on_sliding_layers': variant(model, sp, rope_parameters={'sliding_attention': global_rope, 'full_attention': global_rope}),
            'without_rope_scaling': variant(model, sp, rope_parameters={**ROPE, 'full_attention': {'rope_type': 'default', 'rope_theta': 1000000.0}}),
        }
        no_qk_norm = variant(model, sp)
        for layer in no_qk_norm.model.layers:
            layer.self_attn.q_norm = torch.nn.Identity()
            layer.self_attn.k_norm = torch.nn.Identity()
        changes['without_qk_norm'] = no_qk_norm
        for key, other in changes.items():
            reference[f'max_logit_change_{key}'] = logit_change(model, other, ids)
        reference['chat_template'] = CHAT_TEMPLATE
        reference['chat_ids'] = {json.dumps(m): chat_ids(sp, m) for m in conversations('The little dog') + [[{'role': 'system', 'content': 'Answer briefly.'}, {'role': 'user', 'content': 'The little dog'}]]}
        with open(os.path.join(OUT, 'tiny-gemma3-reference.json'), 'w') as f:
            json.dump(reference, f, separators=(',', ':'))
        print(json.dumps({k: v for k, v in reference.items() if k not in ('generations', 'chat_template', 'chat_ids')}))


if __name__ == '__main__':
    main()
