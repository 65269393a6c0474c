"""
Makes the `qwen3moe` GGUF fixture (committed under test/fixtures/gguf/) as real Qwen3 MoE GGUF
files are made: a seeded random-weight transformers Qwen3MoeForCausalLM (router softmax over
8 experts, top 2, norm_topk_prob, SwiGLU experts of 32, q/k norms, GQA 4/2, head 32 on hidden
64, tied head) with make_arch_fixtures.py's byte-level vocabulary, converted by llama.cpp's own
convert_hf_to_gguf.py (F32), and transformers' logits on it:

- tiny-qwen3moe.gguf
- tiny-qwen3moe-reference.json: for two token sequences, every position's whole logits row;
  transformers' greedy continuation of three prompts (the workerd and page tests' reference).

And `qwen2moe` (Qwen1.5-MoE / Qwen2-57B-A14B: routed experts without renormalisation plus a
sigmoid-gated shared expert, q/k/v biases, untied head), F32 and Q8_0 (llama.cpp's converter):

- tiny-qwen2moe.gguf, tiny-qwen2moe-q8_0.gguf
- tiny-qwen2moe-reference.json (transformers' logits as above, and how far they move without
  the shared expert, with renormalisation, with every expert);
- tiny-qwen2moe-q8_0-reference.json: transformers' logits with the Q8_0 file's weights
  dequantized by gguf-py (ggml's arithmetic) loaded back into the same model.

Usage: /work/venv/bin/python scripts/gguf/make_moe_fixtures.py  (MOE_FIXTURE=qwen2moe: that one only)
"""
import json
import os
import sys
import tempfile

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_arch_fixtures as arch  # noqa: E402


SPECIALS = ['<|endoftext|>', '<|im_start|>', '<|im_end|>']
TEXTS = ['Once upon a time, there was a little girl named Lily.', '<|im_start|>user\nThe dog<|im_end|>\n<|im_start|>assistant\n']


def qwen_tokenizer(template_name):
    """make_arch_fixtures.py's byte-level BPE with Qwen's regex and specials, and a Qwen chat template."""
    from tokenizers import Tokenizer, Regex, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(arch.QWEN2_REGEX), behavior='isolated'),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
    ])
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=560, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator([arch.CORPUS] * 3, trainer)
    tok.add_special_tokens(SPECIALS)
    hf_tok = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token='<|im_end|>', pad_token='<|endoftext|>')
    hf_tok.chat_template = arch.template(template_name)
    pieces = [tok.id_to_token(i) for i in range(tok.get_vocab_size())]
    small = [i for i, p in enumerate(pieces) if p in SPECIALS or not arch.printable_bytelevel(p)]
    return tok, hf_tok, small


def logits_of(model, tok):
    """transformers' whole logits row at every position of TEXTS."""
    sequences = []
    with torch.no_grad():
        for text in TEXTS:
            ids = tok.encode(text).ids
            logits = model(torch.tensor([ids])).logits[0]
            sequences.append({'ids': ids, 'logits': [[float(f'{v:.7g}') for v in row] for row in logits.tolist()]})
    return sequences


GREEDY_PROMPTS = ['Once upon a time', 'The little dog', '<|im_start|>user\nTell me a story<|im_end|>\n<|im_start|>assistant\n']
GREEDY_TOKENS = 16


def greedy_generations(model, tok, eos):
    """transformers' greedy continuation of each prompt (whole-sequence forwards, no cache), with each step's margin."""
    generations = []
    with torch.no_grad():
        for prompt in GREEDY_PROMPTS:
            prompt_ids = tok.encode(prompt).ids
            ids, margins = list(prompt_ids), []
            for _ in range(GREEDY_TOKENS):
                top = model(torch.tensor([ids])).logits[0, -1].topk(2)
                ids.append(int(top.indices[0]))
                margins.append(round(float(top.values[0] - top.values[1]), 5))
                if ids[-1] == eos:
                    break
            greedy = ids[len(prompt_ids):]
            generations.append({'prompt': prompt, 'prompt_ids': prompt_ids, 'greedy_ids': greedy, 'greedy_text': tok.decode(greedy), 'margins': margins})
    return generations


def routing_changes(model, reference, changes):
    """How far the logits move with a router attribute changed in every layer: the routing must matter."""
    ids = torch.tensor([reference['sequences'][0]['ids']])
    with torch.no_grad():
        base = model(ids).logits
        for key, attribute, value in changes:
            saved = [getattr(layer.mlp.gate, attribute) for layer in model.model.layers]
            for layer in model.model.layers:
                setattr(layer.mlp.gate, attribute, value)
            reference[f'max_logit_change_{key}'] = round(float((model(ids).logits - base).abs().max()), 5)
            for layer, old in zip(model.model.layers, saved):
                setattr(layer.mlp.gate, attribute, old)


def qwen3moe(work):
    from transformers import Qwen3MoeConfig, Qwen3MoeForCausalLM

    tok, hf_tok, small = qwen_tokenizer('Qwen-Qwen3-0.6B.jinja')
    hf_dir = os.path.join(work, 'qwen3moe')
    hf_tok.save_pretrained(hf_dir)
    config = Qwen3MoeConfig(
        vocab_size=tok.get_vocab_size(), hidden_size=64, intermediate_size=128, moe_intermediate_size=32, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, head_dim=32, num_experts=8, num_experts_per_tok=2,
        norm_topk_prob=True, decoder_sparse_step=1, mlp_only_layers=[], max_position_embeddings=512,
        rope_theta=1000000.0, rms_norm_eps=1e-6, tie_word_embeddings=True,
        bos_token_id=tok.token_to_id('<|endoftext|>'), eos_token_id=tok.token_to_id('<|im_end|>'))
    torch.manual_seed(0)
    model = Qwen3MoeForCausalLM(config).eval()
    arch.set_weights(model, [('embed_tokens.weight', 1.0), ('q_proj.weight', 0.3), ('k_proj.weight', 0.3), ('v_proj.weight', 0.2),
                             ('o_proj.weight', 0.2), ('gate_up_proj', 0.2), ('down_proj', 0.2), ('gate.weight', 0.5)], small)
    model.save_pretrained(hf_dir, safe_serialization=True)
    arch.convert(hf_dir, os.path.join(arch.OUT, 'tiny-qwen3moe.gguf'), 'f32', pre='qwen2')
    reference = {'sequences': logits_of(model, tok), 'generations': greedy_generations(model, tok, config.eos_token_id)}
    # With every expert taken (softmax-weighted), or the top-k weights not renormalised, the logits move.
    routing_changes(model, reference, [('with_every_expert', 'top_k', config.num_experts), ('without_norm_topk_prob', 'norm_topk_prob', False)])
    with open(os.path.join(arch.OUT, 'tiny-qwen3moe-reference.json'), 'w') as f:
        json.dump(reference, f, separators=(',', ':'))
    print({k: v for k, v in reference.items() if k not in ('sequences', 'generations')})
    print('greedy', [(g['greedy_ids'], min(g['margins'])) for g in reference['generations']])


# GGUF tensor (after blk.N.) -> transformers parameter (after model.layers.N.), for loading a
# quantized file's dequantized weights back into the transformers model.
QWEN2MOE_LAYER_NAMES = {
    'attn_norm.weight': 'input_layernorm.weight', 'ffn_norm.weight': 'post_attention_layernorm.weight',
    'attn_q.weight': 'self_attn.q_proj.weight', 'attn_k.weight': 'self_attn.k_proj.weight', 'attn_v.weight': 'self_attn.v_proj.weight',
    'attn_q.bias': 'self_attn.q_proj.bias', 'attn_k.bias': 'self_attn.k_proj.bias', 'attn_v.bias': 'self_attn.v_proj.bias',
    'attn_output.weight': 'self_attn.o_proj.weight', 'ffn_gate_inp.weight': 'mlp.gate.weight',
    'ffn_down_exps.weight': 'mlp.experts.down_proj', 'ffn_gate_inp_shexp.weight': 'mlp.shared_expert_gate.weight',
    'ffn_gate_shexp.weight': 'mlp.shared_expert.gate_proj.weight', 'ffn_up_shexp.weight': 'mlp.shared_expert.up_proj.weight',
    'ffn_down_shexp.weight': 'mlp.shared_expert.down_proj.weight',
}


def load_dequantized(model, path):
    """Every weight of the transformers model replaced by the GGUF file's, dequantized by gguf-py (ggml's arithmetic)."""
    from gguf import GGUFReader
    from gguf.quants import dequantize

    tensors = {}
    for t in GGUFReader(path).tensors:
        values = dequantize(t.data, t.tensor_type)
        tensors[t.name] = torch.from_numpy(values.reshape([int(d) for d in reversed(t.shape)]).astype('float32').copy())
    params = dict(model.named_parameters())
    with torch.no_grad():
        def put(name, value):
            params[name].copy_(value.reshape(params[name].shape))
        put('model.embed_tokens.weight', tensors.pop('token_embd.weight'))
        put('lm_head.weight', tensors.pop('output.weight'))
        put('model.norm.weight', tensors.pop('output_norm.weight'))
        for i in range(model.config.num_hidden_layers):
            put(f'model.layers.{i}.mlp.experts.gate_up_proj', torch.cat([tensors.pop(f'blk.{i}.ffn_gate_exps.weight'), tensors.pop(f'blk.{i}.ffn_up_exps.weight')], dim=-2))
            for part, hf in QWEN2MOE_LAYER_NAMES.items():
                put(f'model.layers.{i}.{hf}', tensors.pop(f'blk.{i}.{part}'))
    assert not tensors, f'tensors left unmapped: {list(tensors)}'


def qwen2moe(work):
    """Qwen1.5-MoE's layout: qwen2's attention (q/k/v biases, no q/k norms), experts routed by a
    softmax and top-k without renormalisation, and a shared expert of its own width gated by
    sigmoid(shared_expert_gate . x); an untied head (llama.cpp requires output.weight)."""
    from transformers import Qwen2MoeConfig, Qwen2MoeForCausalLM

    # Its own draws whether or not qwen3moe's came first: MOE_FIXTURE=qwen2moe makes the same files.
    arch.rng = arch.np.random.default_rng(20261203)
    tok, hf_tok, small = qwen_tokenizer('Qwen-Qwen2.5-7B-Instruct.jinja')
    hf_dir = os.path.join(work, 'qwen2moe')
    hf_tok.save_pretrained(hf_dir)
    # Widths all different (and multiples of Q8_0's 32): a shared expert read at the routed
    # experts' width, or at feed_forward_length, fails the shape check.
    config = Qwen2MoeConfig(
        vocab_size=tok.get_vocab_size(), hidden_size=64, intermediate_size=128, moe_intermediate_size=32,
        shared_expert_intermediate_size=96, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
        num_experts=8, num_experts_per_tok=2, norm_topk_prob=False, decoder_sparse_step=1, mlp_only_layers=[],
        qkv_bias=True, max_position_embeddings=512, rope_parameters={'rope_type': 'default', 'rope_theta': 1000000.0},
        rms_norm_eps=1e-6, tie_word_embeddings=False,
        bos_token_id=tok.token_to_id('<|endoftext|>'), eos_token_id=tok.token_to_id('<|im_end|>'))
    torch.manual_seed(0)
    model = Qwen2MoeForCausalLM(config).eval()
    arch.set_weights(model, [('embed_tokens.weight', 1.0), ('lm_head.weight', 1.0), ('q_proj.weight', 0.3), ('k_proj.weight', 0.3),
                             ('v_proj.weight', 0.2), ('proj.bias', 0.3), ('o_proj.weight', 0.2), ('gate_up_proj', 0.2),
                             ('experts.down_proj', 0.2), ('shared_expert_gate.weight', 0.5), ('shared_expert.gate_proj.weight', 0.2),
                             ('shared_expert.up_proj.weight', 0.2), ('shared_expert.down_proj.weight', 0.2), ('gate.weight', 0.5)], small)
    model.save_pretrained(hf_dir, safe_serialization=True)
    f32 = os.path.join(arch.OUT, 'tiny-qwen2moe.gguf')
    q8 = os.path.join(arch.OUT, 'tiny-qwen2moe-q8_0.gguf')
    arch.convert(hf_dir, f32, 'f32', pre='qwen2')
    arch.convert(hf_dir, q8, 'q8_0', pre='qwen2')
    reference = {'sequences': logits_of(model, tok), 'generations': greedy_generations(model, tok, config.eos_token_id)}
    # Routing and the shared expert must matter: renormalised top-k, every expert, no shared expert.
    routing_changes(model, reference, [('with_norm_topk_prob', 'norm_topk_prob', True), ('with_every_expert', 'top_k', config.num_experts)])
    with torch.no_grad():
        ids = torch.tensor([reference['sequences'][0]['ids']])
        base = model(ids).logits
        saved = [layer.mlp.shared_expert_gate.weight.clone() for layer in model.model.layers]
        for layer in model.model.layers:
            layer.mlp.shared_expert_gate.weight.fill_(-1e4)
        reference['max_logit_change_without_shared_expert'] = round(float((model(ids).logits - base).abs().max()), 5)
        for layer, old in zip(model.model.layers, saved):
            layer.mlp.shared_expert_gate.weight.copy_(old)
    with open(os.path.join(arch.OUT, 'tiny-qwen2moe-reference.json'), 'w') as f:
        json.dump(reference, f, separators=(',', ':'))
    print({k: v for k, v in reference.items() if k not in ('sequences', 'generations')})
    print('greedy', [(g['greedy_ids'], min(g['margins'])) for g in reference['generations']])
    # The Q8_0 file's reference: transformers on its weights as ggml dequantizes them.
    load_dequantized(model, q8)
    with open(os.path.join(arch.OUT, 'tiny-qwen2moe-q8_0-reference.json'), 'w') as f:
        json.dump({'sequences': logits_of(model, tok)}, f, separators=(',', ':'))


def main():
    only = os.environ.get('MOE_FIXTURE')
    with tempfile.TemporaryDirectory() as work:
        for name, make in [('qwen3moe', qwen3moe), ('qwen2moe', qwen2moe)]:
            if only in (None, name):
                make(work)


if __name__ == '__main__':
    main()
