"""
Makes the qwen3 and phi3 GGUF fixtures (committed under test/fixtures/gguf/) from seeded
random-weight transformers models, converted by llama.cpp's own convert_hf_to_gguf.py, and
transformers' logits on them (the reference test/gguf/architecture-logits.test.ts checks ours against):

- tiny-qwen3.gguf: Qwen3ForCausalLM (no q/k/v biases, per-head RMSNorm on q and k before
  RoPE, head_dim 32 where hidden / heads is 16, GQA 4/2, tied head, rope theta 1e6), F32;
  a byte-level BPE vocabulary with Qwen's special tokens, qwen2 pre-tokenizer, Qwen3-0.6B's
  chat template (llama.cpp's models/templates copy);
- tiny-qwen3-q8_0.gguf: the same model converted with --outtype q8_0 (llama.cpp's quantizer);
- tiny-phi3.gguf: Phi3ForCausalLM (fused qkv_proj and gate_up_proj, NEOX rope, LongRoPE
  short/long factors with original context 64 of 4096, sliding window 1024, untied head), F32;
  a SentencePiece vocabulary (byte fallback) with Phi-3's added tokens, Phi-3.5-mini's template;
- tiny-phi3-q4.gguf: tiny-phi3.gguf with its matrices requantized by the gguf package
  (ggml's reference quantizers): Q4_1 fused qkv and gate/up (mins), Q5_0 output, Q8_0 down,
  Q4_0 embedding, Q5_1 head;
- arch-logits.json: transformers' logits for a few token sequences on each F32 model: every
  position's logits of a fixed sample of token ids, and the last position's whole row.

Weights are scaled so logits spread over tens of nats (no near ties between the top two in
greedy decoding), and special / byte / padding tokens get small output rows so greedy text is
printable (llama-server refuses to return invalid UTF-8).

LongRoPE: transformers picks the long factors when the sequence passes the original context,
llama.cpp when its context (per sequence slot) does; the engine serves 1024 > 64 positions, so
the reference sequences are longer than 64 tokens, where both libraries use the long factors.

Usage: /path/to/venv/bin/python scripts/gguf/make_arch_fixtures.py [llama.cpp source folder]
(default: the sources scripts/peer/build-llama-server.sh unpacks, ~/.cache/edge-llm/llama-server/src).
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_fixtures import BPE_CORPUS, copy_metadata  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = os.path.join(ROOT, 'test', 'fixtures', 'gguf')
LLAMA_CPP = sys.argv[1] if len(sys.argv) > 1 else os.path.expanduser('~/.cache/edge-llm/llama-server/src')

# make_fixtures.py's BPE text and one line more.
CORPUS = BPE_CORPUS + 'You tell short stories. The cat sat on the mat and looked at the moon. A bird sang in the tree.\n'

QWEN2_REGEX = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"

rng = np.random.default_rng(20261203)


def template(name):
    with open(os.path.join(LLAMA_CPP, 'models', 'templates', name), encoding='utf-8') as f:
        return f.read()


def set_weights(model, scales, small_rows):
    """Seeded normal weights: each parameter name's scale by its suffix; norms near 1."""
    with torch.no_grad():
        for name, param in model.named_parameters():
            if name.endswith('norm.weight'):
                # Not all ones: a norm weight laid out in the wrong order changes the logits.
                values = 1 + 0.3 * rng.standard_normal(param.shape)
                if name == 'model.norm.weight':
                    # The final norm sets the logits' spread: wide, so the top two are rarely near.
                    values *= 3
            else:
                scale = next(s for suffix, s in scales if name.endswith(suffix))
                values = rng.standard_normal(param.shape) * scale
                if name.endswith(('embed_tokens.weight', 'lm_head.weight')):
                    values[small_rows] *= 0.05
            param.copy_(torch.from_numpy(values.astype(np.float32)))


def convert(hf_dir, out, outtype, pre=None):
    """llama.cpp's converter; a tokenizer trained here is unknown to its pre-tokenizer hash table, so `pre` names it."""
    runner = (
        'import sys, runpy\n'
        f'sys.path.insert(0, {LLAMA_CPP!r})\n'
        'import conversion.base as base\n'
        + (f'base.TextModel.get_vocab_base_pre = lambda self, tokenizer: {pre!r}\n' if pre else '')
        + f'sys.argv = ["convert_hf_to_gguf.py", {hf_dir!r}, "--outfile", {out!r}, "--outtype", {outtype!r}]\n'
        f'runpy.run_path({os.path.join(LLAMA_CPP, "convert_hf_to_gguf.py")!r}, run_name="__main__")\n'
    )
    subprocess.run([sys.executable, '-c', runner], check=True, cwd=LLAMA_CPP)


def logits_reference(model, sequences, sample):
    out = []
    with torch.no_grad():
        for ids in sequences:
            logits = model(torch.tensor([ids])).logits[0].numpy().astype(np.float64)
            out.append({
                'ids': ids,
                'sample_logits': [[float(f'{x:.7g}') for x in row[sample]] for row in logits],
                'last_logits': [float(f'{x:.7g}') for x in logits[-1]],
                'argmax': [int(i) for i in logits.argmax(-1)],
            })
    return out


def qwen3(work):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers, Regex
    from transformers import PreTrainedTokenizerFast, Qwen3Config, Qwen3ForCausalLM

    specials = ['<|endoftext|>', '<|im_start|>', '<|im_end|>']
    added = ['<think>', '</think>']
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(QWEN2_REGEX), behavior='isolated'),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
    ])
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=560, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator([CORPUS] * 3, trainer)
    tok.add_special_tokens(specials)
    tok.add_tokens(added)
    hf_tok = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token='<|im_end|>', pad_token='<|endoftext|>')
    hf_tok.chat_template = template('Qwen-Qwen3-0.6B.jinja')
    vocab = tok.get_vocab_size()
    hf_dir = os.path.join(work, 'qwen3')
    hf_tok.save_pretrained(hf_dir)

    config = Qwen3Config(
        vocab_size=vocab, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, head_dim=32, max_position_embeddings=512,
        rope_theta=1000000.0, rms_norm_eps=1e-6, tie_word_embeddings=True,
        bos_token_id=tok.token_to_id('<|endoftext|>'), eos_token_id=tok.token_to_id('<|im_end|>'),
        torch_dtype='float32',
    )
    model = Qwen3ForCausalLM(config).eval()
    pieces = [tok.id_to_token(i) for i in range(vocab)]
    small = [i for i, p in enumerate(pieces) if p in specials + added or not printable_bytelevel(p)]
    set_weights(model, [('embed_tokens.weight', 1.0), ('q_proj.weight', 0.3), ('k_proj.weight', 0.3), ('v_proj.weight', 0.2),
                        ('o_proj.weight', 0.2), ('gate_proj.weight', 0.2), ('up_proj.weight', 0.2), ('down_proj.weight', 0.2)], small)
    model.save_pretrained(hf_dir, safe_serialization=True)
    convert(hf_dir, os.path.join(OUT, 'tiny-qwen3.gguf'), 'f32', pre='qwen2')
    convert(hf_dir, os.path.join(OUT, 'tiny-qwen3-q8_0.gguf'), 'q8_0', pre='qwen2')
    texts = ['Once upon a time, there was a little girl named Lily.', '<|im_start|>user\nThe dog<|im_end|>\n<|im_start|>assistant\n']
    sequences = [tok.encode(t).ids for t in texts]
    return logits_reference(model, sequences, sample_ids(vocab))


def printable_bytelevel(piece):
    # GPT-2's bytes_to_unicode: printable bytes map to themselves, the rest to 256 + n.
    byte_of = {}
    n = 0
    for b in range(256):
        if (ord('!') <= b <= ord('~')) or (0xA1 <= b <= 0xAC) or (0xAE <= b <= 0xFF):
            byte_of[chr(b)] = b
        else:
            byte_of[chr(256 + n)] = b
            n += 1
    try:
        text = bytes(byte_of[c] for c in piece).decode('utf-8')
    except (KeyError, UnicodeDecodeError):
        return False
    return all(c == '\n' or c >= ' ' for c in text)


def sample_ids(vocab):
    return sorted(set(int(i) for i in np.linspace(0, vocab - 1, 24)))


def phi3(work):
    import sentencepiece as spm
    from transformers import Phi3Config, Phi3ForCausalLM

    hf_dir = os.path.join(work, 'phi3')
    os.makedirs(hf_dir)
    corpus = os.path.join(work, 'corpus.txt')
    with open(corpus, 'w', encoding='utf-8') as f:
        f.write(CORPUS * 3)
    spm.SentencePieceTrainer.train(
        input=corpus, model_prefix=os.path.join(hf_dir, 'tokenizer'), vocab_size=420, model_type='bpe',
        byte_fallback=True, character_coverage=1.0, unk_id=0, bos_id=1, eos_id=2, pad_id=-1,
        add_dummy_prefix=True, remove_extra_whitespaces=False, split_digits=True, minloglevel=2,
    )
    sp = spm.SentencePieceProcessor(model_file=os.path.join(hf_dir, 'tokenizer.model'))
    base = sp.vocab_size()
    # Phi-3's added tokens after the SentencePiece pieces, then padding rows as in its 32064 vocabulary.
    added = ['<|endoftext|>', '<|assistant|>', '<|system|>', '<|end|>', '<|user|>']
    vocab = base + len(added) + 3
    ids = {token: base + i for i, token in enumerate(added)}
    tokenizer_config = {
        'tokenizer_class': 'LlamaTokenizer', 'add_bos_token': False, 'add_eos_token': False, 'legacy': False,
        'bos_token': '<s>', 'eos_token': '<|endoftext|>', 'unk_token': '<unk>', 'pad_token': '<|endoftext|>',
        'chat_template': template('microsoft-Phi-3.5-mini-instruct.jinja'),
        'added_tokens_decoder': {str(i): {'content': t, 'lstrip': False, 'normalized': False, 'rstrip': True, 'single_word': False, 'special': True} for t, i in ids.items()},
    }
    with open(os.path.join(hf_dir, 'tokenizer_config.json'), 'w', encoding='utf-8') as f:
        json.dump(tokenizer_config, f, indent=2)

    head_dim = 16
    config = Phi3Config(
        vocab_size=vocab, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=4096,
        original_max_position_embeddings=64, sliding_window=1024, rms_norm_eps=1e-5,
        rope_parameters={
            'rope_type': 'longrope', 'rope_theta': 10000.0,
            'short_factor': [float(x) for x in np.linspace(1.0, 1.6, head_dim // 2)],
            'long_factor': [float(x) for x in np.geomspace(1.0, 40.0, head_dim // 2)],
            'original_max_position_embeddings': 64,
        },
        tie_word_embeddings=False, bos_token_id=1, eos_token_id=ids['<|endoftext|>'], pad_token_id=ids['<|endoftext|>'],
        torch_dtype='float32',
    )
    model = Phi3ForCausalLM(config).eval()
    small = [i for i in range(vocab) if i >= base or i < 3 or sp.is_byte(i)]
    # Projections about 1/sqrt(fan-in): soft attention and a near-linear MLP, so llama.cpp's 8-bit
    # rounding of activations in its quantized dot products moves the logits by little.
    set_weights(model, [('embed_tokens.weight', 1.0), ('lm_head.weight', 1.0), ('qkv_proj.weight', 0.12), ('o_proj.weight', 0.12),
                        ('gate_up_proj.weight', 0.12), ('down_proj.weight', 0.08)], small)
    model.save_pretrained(hf_dir, safe_serialization=True)
    f32 = os.path.join(OUT, 'tiny-phi3.gguf')
    convert(hf_dir, f32, 'f32')
    requantize(f32, os.path.join(OUT, 'tiny-phi3-q4.gguf'), {
        'attn_qkv': 'Q4_1', 'ffn_up': 'Q4_1', 'attn_output': 'Q5_0', 'ffn_down': 'Q8_0', 'token_embd': 'Q4_0', 'output': 'Q5_1',
    })
    # transformers' rotary embedding: the attention factor llama.cpp's converter writes.
    rotary = model.model.rotary_emb
    sequences = [
        [int(x) for x in rng.integers(3, base, 80)],
        sp.encode('Once upon a time, there was a little girl named Lily. She loved to play outside in the sunshine. One day, she saw a big dog in the park.'),
    ]
    assert all(len(s) > 64 for s in sequences), [len(s) for s in sequences]
    return logits_reference(model, sequences, sample_ids(vocab)), float(rotary.attention_scaling)


def requantize(source, target, types):
    import gguf
    from gguf import GGMLQuantizationType as T, quants
    reader = gguf.GGUFReader(source)
    arch = bytes(reader.fields['general.architecture'].parts[-1]).decode()
    writer = gguf.GGUFWriter(target, arch)
    copy_metadata(reader, writer, 3)  # MOSTLY_Q4_1
    for tensor in reader.tensors:
        values = np.array(tensor.data, dtype=np.float32).reshape([int(n) for n in reversed(tensor.shape)])
        part = tensor.name.split('.')[-2]
        if tensor.name.endswith('.weight') and part in types and values.ndim == 2:
            qtype = T[types[part]]
            writer.add_tensor(tensor.name, quants.quantize(values, qtype), raw_dtype=qtype)
        else:
            writer.add_tensor(tensor.name, values)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def main():
    torch.manual_seed(0)
    work = tempfile.mkdtemp(prefix='arch-fixtures-')
    try:
        qwen3_logits = qwen3(work)
        phi3_logits, phi3_attention_factor = phi3(work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    reference = {
        'note': 'transformers logits (float32, eager) written by scripts/gguf/make_arch_fixtures.py',
        'tiny-qwen3.gguf': {'sample': sample_ids(len(qwen3_logits[0]['last_logits'])), 'sequences': qwen3_logits},
        'tiny-phi3.gguf': {'sample': sample_ids(len(phi3_logits[0]['last_logits'])), 'attention_factor': phi3_attention_factor, 'sequences': phi3_logits},
    }
    with open(os.path.join(OUT, 'arch-logits.json'), 'w', encoding='utf-8') as f:
        json.dump(reference, f, separators=(',', ':'))
        f.write('\n')


if __name__ == '__main__':
    main()
