"""
Makes the `qwen3moe` GGUF fixture (committed under test/fixtures/gguf/) as real Qwen3 MoE GGUF
files are made: a seeded random-weight transformers Qwen3MoeForCausalLM (router softmax over
8 experts, top 2, norm_topk_prob, SwiGLU experts of 32, q/k norms, GQA 4/2, head 32 on hidden
64, tied head) with make_arch_fixtures.py's byte-level vocabulary, converted by llama.cpp's own
convert_hf_to_gguf.py (F32), and transformers' logits on it:

- tiny-qwen3moe.gguf
- tiny-qwen3moe-reference.json: for two token sequences, every position's whole logits row.

Usage: /work/venv/bin/python scripts/gguf/make_moe_fixtures.py
"""
import json
import os
import sys
import tempfile

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_arch_fixtures as arch  # noqa: E402


def main():
    from tokenizers import Tokenizer, Regex, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast, Qwen3MoeConfig, Qwen3MoeForCausalLM

    with tempfile.TemporaryDirectory() as work:
        specials = ['<|endoftext|>', '<|im_start|>', '<|im_end|>']
        tok = Tokenizer(models.BPE())
        tok.pre_tokenizer = pre_tokenizers.Sequence([
            pre_tokenizers.Split(Regex(arch.QWEN2_REGEX), behavior='isolated'),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ])
        tok.decoder = decoders.ByteLevel()
        trainer = trainers.BpeTrainer(vocab_size=560, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
        tok.train_from_iterator([arch.CORPUS] * 3, trainer)
        tok.add_special_tokens(specials)
        hf_tok = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token='<|im_end|>', pad_token='<|endoftext|>')
        hf_tok.chat_template = arch.template('Qwen-Qwen3-0.6B.jinja')
        vocab = tok.get_vocab_size()
        hf_dir = os.path.join(work, 'qwen3moe')
        hf_tok.save_pretrained(hf_dir)
        config = Qwen3MoeConfig(
            vocab_size=vocab, hidden_size=64, intermediate_size=128, moe_intermediate_size=32, num_hidden_layers=2,
            num_attention_heads=4, num_key_value_heads=2, head_dim=32, num_experts=8, num_experts_per_tok=2,
            norm_topk_prob=True, decoder_sparse_step=1, mlp_only_layers=[], max_position_embeddings=512,
            rope_theta=1000000.0, rms_norm_eps=1e-6, tie_word_embeddings=True,
            bos_token_id=tok.token_to_id('<|endoftext|>'), eos_token_id=tok.token_to_id('<|im_end|>'))
        torch.manual_seed(0)
        model = Qwen3MoeForCausalLM(config).eval()
        pieces = [tok.id_to_token(i) for i in range(vocab)]
        small = [i for i, p in enumerate(pieces) if p in specials or not arch.printable_bytelevel(p)]
        arch.set_weights(model, [('embed_tokens.weight', 1.0), ('q_proj.weight', 0.3), ('k_proj.weight', 0.3), ('v_proj.weight', 0.2),
                                 ('o_proj.weight', 0.2), ('gate_up_proj', 0.2), ('down_proj', 0.2), ('gate.weight', 0.5)], small)
        model.save_pretrained(hf_dir, safe_serialization=True)
        arch.convert(hf_dir, os.path.join(arch.OUT, 'tiny-qwen3moe.gguf'), 'f32', pre='qwen2')
        texts = ['Once upon a time, there was a little girl named Lily.', '<|im_start|>user\nThe dog<|im_end|>\n<|im_start|>assistant\n']
        reference = {'sequences': []}
        with torch.no_grad():
            for text in texts:
                ids = tok.encode(text).ids
                logits = model(torch.tensor([ids])).logits[0]
                reference['sequences'].append({'ids': ids, 'logits': [[float(f'{v:.7g}') for v in row] for row in logits.tolist()]})
            # The routing must matter: with every expert taken (softmax-weighted), or the top-k
            # weights not renormalised, the logits move.
            ids = torch.tensor([reference['sequences'][0]['ids']])
            base = model(ids).logits
            for key, attribute, value in [('with_every_expert', 'top_k', config.num_experts), ('without_norm_topk_prob', 'norm_topk_prob', False)]:
                saved = [getattr(layer.mlp.gate, attribute) for layer in model.model.layers]
                for layer in model.model.layers:
                    setattr(layer.mlp.gate, attribute, value)
                reference[f'max_logit_change_{key}'] = round(float((model(ids).logits - base).abs().max()), 5)
                for layer, old in zip(model.model.layers, saved):
                    setattr(layer.mlp.gate, attribute, old)
        with open(os.path.join(arch.OUT, 'tiny-qwen3moe-reference.json'), 'w') as f:
            json.dump(reference, f, separators=(',', ':'))
        print({k: v for k, v in reference.items() if k != 'sequences'})


if __name__ == '__main__':
    main()
