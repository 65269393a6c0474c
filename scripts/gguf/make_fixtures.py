"""
Makes the GGUF test fixtures (committed under test/fixtures/gguf/), with the `gguf` Python
package, llama.cpp's own reader/writer and the reference for ggml's dequantization:

- blocks/<TYPE>.bin + blocks/<TYPE>.f32: seeded random blocks of each tensor type and what
  gguf.quants.dequantize (a mirror of ggml's dequantize_row_*) makes of them;
- tiny-llama-kquants.gguf: a seeded random `llama` model whose matrices mix Q4_K, Q5_K and
  Q6_K as a Q4_K_M file does, untied head, GQA, rope theta 500000;
- tiny-llama-legacy.gguf: the same shape in F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1
  across its tensors, tied head, rope theta 10000;
- tiny-llama-legacy-quantized.gguf: the same shape with every projection of one quantized
  type (fused q/k/v and gate/up alike), untied Q5_1 embedding and Q4_0 head;
- tiny-llama-kquants-f32.gguf: tiny-llama-kquants.gguf with every tensor replaced by the
  gguf package's dequantization of it, stored as F32: the same model for llama.cpp's float
  path, where neither engine quantizes activations;
- tiny-llama-bpe.gguf: a small F32 `llama` model with a byte-level BPE vocabulary
  (tokenizer.ggml.model gpt2, pre-tokenizer llama-bpe, Llama 3's), trained here with the
  `tokenizers` package on a few paragraphs, ChatML special tokens and template;
- tiny-qwen2.gguf: the same with architecture `qwen2` (q/k/v biases, NEOX rope, rope theta
  1e6, linear rope scaling 4) and the qwen2 pre-tokenizer;
- tiny-llama3-rope-freqs.gguf: tiny-llama-bpe's shape with Llama 3.1's rope_freqs.weight;
- corrupt files are made by the tests themselves from these.

The vocabulary is stories260K's llama2.c tokenizer (512 SentencePiece pieces with scores and
byte fallback), read from the committed test/fixtures/stories260K/tok512.bin.

Usage: /path/to/venv/bin/python scripts/gguf/make_fixtures.py [folder with tok512.bin]
"""
import os
import struct
import sys

import numpy as np
import gguf
from gguf import GGMLQuantizationType as T, quants

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = os.path.join(ROOT, 'test', 'fixtures', 'gguf')
# The committed copy of stories260K's tokenizer (test/fixtures/stories260K, MIT), or a folder holding tok512.bin.
TOKENIZER_DIR = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, 'test', 'fixtures', 'stories260K')

BLOCK_TYPES = ['F32', 'F16', 'BF16', 'Q8_0', 'Q4_0', 'Q4_1', 'Q5_0', 'Q5_1', 'Q4_K', 'Q5_K', 'Q6_K']

# Byte offsets of the float16 fields in each block (d, and m / dmin where there is one).
F16_FIELDS = {'Q8_0': [0], 'Q4_0': [0], 'Q4_1': [0, 2], 'Q5_0': [0], 'Q5_1': [0, 2],
              'Q4_K': [0, 2], 'Q5_K': [0, 2], 'Q6_K': [208]}

rng = np.random.default_rng(20261201)


def random_f16(count, scale):
    return (rng.standard_normal(count) * scale).astype(np.float16)


def random_blocks(type_name, n_blocks, scale):
    """Random block bytes, its float16 fields set to finite values of about `scale`."""
    qtype = T[type_name]
    block_size, type_size = gguf.GGML_QUANT_SIZES[qtype]
    raw = rng.integers(0, 256, size=(n_blocks, type_size), dtype=np.uint8)
    for offset in F16_FIELDS[type_name]:
        raw[:, offset:offset + 2] = random_f16(n_blocks, scale).view(np.uint8).reshape(n_blocks, 2)
    return raw


def write_block_fixtures():
    os.makedirs(os.path.join(OUT, 'blocks'), exist_ok=True)
    for name in BLOCK_TYPES:
        qtype = T[name]
        if name in ('F32', 'F16', 'BF16'):
            values = rng.standard_normal((4, 256)).astype(np.float32) * 3
            values[0, :4] = [0.0, -0.0, 1e-30, -65504.0]
            raw = quants.quantize(values, qtype) if name == 'BF16' else values.astype(np.float16 if name == 'F16' else np.float32)
            raw = np.ascontiguousarray(raw).view(np.uint8)
        else:
            n_blocks = 1024 // gguf.GGML_QUANT_SIZES[qtype][0]
            raw = random_blocks(name, n_blocks, 0.01)
            # Edge cases ggml handles: a zero scale, a negative one, a subnormal one.
            d = F16_FIELDS[name][0]
            raw[0, d:d + 2] = np.array([0.0], dtype=np.float16).view(np.uint8)
            raw[1, d:d + 2] = np.array([-0.5], dtype=np.float16).view(np.uint8)
            raw[2, d:d + 2] = np.array([3e-7], dtype=np.float16).view(np.uint8)
        dequantized = quants.dequantize(raw.reshape(-1), qtype).astype(np.float32)
        raw.reshape(-1).tofile(os.path.join(OUT, 'blocks', f'{name}.bin'))
        dequantized.reshape(-1).tofile(os.path.join(OUT, 'blocks', f'{name}.f32'))


def read_llama2c_tokenizer(path):
    data = open(path, 'rb').read()
    at = 4
    pieces, scores = [], []
    while at < len(data):
        score, length = struct.unpack_from('<fi', data, at)
        at += 8
        pieces.append(data[at:at + length].decode('utf-8'))
        scores.append(score)
        at += length
    renamed = {'\n<s>\n': '<s>', '\n</s>\n': '</s>'}
    pieces = [renamed.get(p, p.replace(' ', '\u2581')) for p in pieces]
    return pieces, scores


CHAT_TEMPLATE = (
    "{{ bos_token }}{% for message in messages %}"
    "{{ '<|' + message['role'] + '|>\\n' + message['content'] + '</s>\\n' }}"
    "{% endfor %}{% if add_generation_prompt %}{{ '<|assistant|>\\n' }}{% endif %}"
)

DIM, N_HEADS, N_KV_HEADS, HIDDEN, N_LAYERS, CONTEXT = 256, 4, 2, 256, 2, 512


def matrix(writer, name, rows, cols, type_name, scale, row_scale=None):
    """A [rows, cols] nn.Linear weight (ggml dims [cols, rows]) stored as `type_name`, row r scaled by row_scale[r]."""
    qtype = T[type_name]
    row_scale = np.ones(rows, dtype=np.float32) if row_scale is None else row_scale
    if type_name in ('Q4_K', 'Q5_K', 'Q6_K'):
        # No Python quantizer for K-quants: random blocks, centred and scaled so an element
        # is about `scale`.
        block_size, _ = gguf.GGML_QUANT_SIZES[qtype]
        n_blocks = rows * cols // block_size
        unit = {'Q4_K': 31 * 7.5, 'Q5_K': 31 * 15.5, 'Q6_K': 64 * 32}[type_name]
        raw = random_blocks(type_name, n_blocks, 0)
        d = np.abs(rng.standard_normal(n_blocks) * 0.3 + 1).astype(np.float32) * scale / unit
        d *= np.repeat(row_scale, cols // block_size)
        if type_name == 'Q6_K':
            raw[:, 208:210] = d.astype(np.float16).view(np.uint8).reshape(n_blocks, 2)
        else:
            centre = {'Q4_K': 7.5, 'Q5_K': 15.5}[type_name]
            # Each sub-block's min equal to its scale (bytes 4..7 = 0..3, high nibbles of
            # 8..11 = low ones), so with dmin = centre * d every sub-block is centred:
            # d sc (q - centre), a well-conditioned random model.
            raw[:, 8:12] = (raw[:, 8:12] & 0x0F) | ((raw[:, 8:12] & 0x0F) << 4)
            raw[:, 4:8] = raw[:, 0:4]
            raw[:, 0:2] = d.astype(np.float16).view(np.uint8).reshape(n_blocks, 2)
            raw[:, 2:4] = (d * centre).astype(np.float16).view(np.uint8).reshape(n_blocks, 2)
        writer.add_tensor(name, raw.reshape(rows, -1), raw_dtype=qtype)
        return
    values = (rng.standard_normal((rows, cols)) * scale * row_scale[:, None]).astype(np.float32)
    if type_name == 'F32':
        writer.add_tensor(name, values)
    elif type_name == 'F16':
        writer.add_tensor(name, values.astype(np.float16))
    else:
        writer.add_tensor(name, quants.quantize(values, qtype), raw_dtype=qtype)


def vector(writer, name, size):
    writer.add_tensor(name, (1 + 0.1 * rng.standard_normal(size)).astype(np.float32))


def write_model(path, types, *, rope_theta, tied, file_type, name):
    pieces, scores = read_llama2c_tokenizer(os.path.join(TOKENIZER_DIR, 'tok512.bin'))
    vocab = len(pieces)
    head_dim = DIM // N_HEADS
    kv_dim = head_dim * N_KV_HEADS
    writer = gguf.GGUFWriter(path, 'llama')
    writer.add_name(name)
    writer.add_file_type(file_type)
    writer.add_vocab_size(vocab)
    writer.add_context_length(CONTEXT)
    writer.add_embedding_length(DIM)
    writer.add_block_count(N_LAYERS)
    writer.add_feed_forward_length(HIDDEN)
    writer.add_rope_dimension_count(head_dim)
    writer.add_head_count(N_HEADS)
    writer.add_head_count_kv(N_KV_HEADS)
    writer.add_layer_norm_rms_eps(1e-5)
    writer.add_rope_freq_base(rope_theta)
    writer.add_tokenizer_model('llama')
    writer.add_tokenizer_pre('default')
    writer.add_token_list(pieces)
    writer.add_token_scores(scores)
    token_types = [2 if i == 0 else 3 if i in (1, 2) else 6 if p.startswith('<0x') and len(p) == 6 else 1 for i, p in enumerate(pieces)]
    writer.add_token_types(token_types)
    writer.add_unk_token_id(0)
    writer.add_bos_token_id(1)
    writer.add_eos_token_id(2)
    writer.add_add_bos_token(True)
    writer.add_add_eos_token(False)
    writer.add_chat_template(CHAT_TEMPLATE)

    # Large embedding and head weights: logits far apart, so greedy choices do not hinge on
    # the last bits of either engine's arithmetic.
    # Byte tokens get small rows: their logits stay low, so greedy text is whole UTF-8
    # (llama-server answers 500 to a completion that is not).
    rows = np.ones(vocab, dtype=np.float32)
    rows[[i for i, t in enumerate(token_types) if t == 6]] = 0.05
    matrix(writer, 'token_embd.weight', vocab, DIM, types['token_embd'], 1.0, rows)
    vector(writer, 'output_norm.weight', DIM)
    if not tied:
        matrix(writer, 'output.weight', vocab, DIM, types['output'], 1.0, rows)
    for i in range(N_LAYERS):
        t = lambda key: types[key][i] if isinstance(types[key], list) else types[key]
        vector(writer, f'blk.{i}.attn_norm.weight', DIM)
        matrix(writer, f'blk.{i}.attn_q.weight', DIM, DIM, t('attn_q'), 0.15)
        matrix(writer, f'blk.{i}.attn_k.weight', kv_dim, DIM, t('attn_k'), 0.15)
        matrix(writer, f'blk.{i}.attn_v.weight', kv_dim, DIM, t('attn_v'), 0.1)
        matrix(writer, f'blk.{i}.attn_output.weight', DIM, DIM, t('attn_output'), 0.1)
        vector(writer, f'blk.{i}.ffn_norm.weight', DIM)
        matrix(writer, f'blk.{i}.ffn_gate.weight', HIDDEN, DIM, t('ffn_gate'), 0.1)
        matrix(writer, f'blk.{i}.ffn_down.weight', DIM, HIDDEN, t('ffn_down'), 0.1)
        matrix(writer, f'blk.{i}.ffn_up.weight', HIDDEN, DIM, t('ffn_up'), 0.1)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def copy_metadata(reader, writer, file_type):
    """Every key/value of `reader`'s file into `writer` (its architecture already set), general.file_type as given."""
    for field in reader.fields.values():
        if field.name.startswith('GGUF.') or field.name == 'general.architecture':
            continue
        kind = field.types[0]
        if kind == gguf.GGUFValueType.ARRAY:
            item = field.types[1]
            if item == gguf.GGUFValueType.STRING:
                value = [bytes(field.parts[i]).decode('utf-8') for i in field.data]
            else:
                value = [field.parts[i][0].item() for i in field.data]
            writer.add_key_value(field.name, value, kind, sub_type=item)
        elif kind == gguf.GGUFValueType.STRING:
            writer.add_key_value(field.name, bytes(field.parts[field.data[0]]).decode('utf-8'), kind)
        elif field.name == 'general.file_type':
            writer.add_key_value(field.name, file_type, kind)
        else:
            writer.add_key_value(field.name, field.parts[field.data[0]][0].item(), kind)


def write_f32_twin(source, target):
    reader = gguf.GGUFReader(source)
    writer = gguf.GGUFWriter(target, 'llama')
    copy_metadata(reader, writer, 0)
    for tensor in reader.tensors:
        values = quants.dequantize(tensor.data, tensor.tensor_type).astype(np.float32)
        writer.add_tensor(tensor.name, values.reshape([int(n) for n in reversed(tensor.shape)]))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


BPE_CORPUS = """Once upon a time, there was a little girl named Lily. She loved to play outside in the sunshine.
One day, she saw a big dog in the park. The dog was friendly and wagged its tail! "Hello," said Lily.
They played together until 5 o'clock, then 6, then 1234 minutes later they'd gone home. It's late, isn't it?
Tom and Lily went to the store to buy 3 apples, 12 eggs and 250 grams of butter.
Numbers: 0 1 2 3 4 5 6 7 8 9 10 100 1000 2026. Symbols: a+b=c, (x), [y], {z}, #tag, @name, 50% off!
Café, naïve, über, 日本語のテキスト, emoji 🙂 and tabs\tand\nnew lines.
"""

BPE_SPECIALS = ['<|begin_of_text|>', '<|end_of_text|>', '<|im_start|>', '<|im_end|>']

CHATML_TEMPLATE = (
    "{{ bos_token }}{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>\\n' }}"
    "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)


def write_bpe_model(path, arch='llama', pre='llama-bpe', rope_freqs=False, linear_rope=None):
    import json
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers, decoders
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=600, special_tokens=BPE_SPECIALS, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tokenizer.train_from_iterator([BPE_CORPUS] * 3, trainer)
    model = json.loads(tokenizer.to_str())['model']
    vocab = sorted(model['vocab'].items(), key=lambda item: item[1])
    pieces = [piece for piece, _ in vocab]
    merges = [m if isinstance(m, str) else ' '.join(m) for m in model['merges']]
    dim, heads, kv_heads, hidden, layers = 64, 4, 2, 128, 2
    writer = gguf.GGUFWriter(path, arch)
    writer.add_name(os.path.basename(path)[:-5])
    writer.add_file_type(0)
    writer.add_vocab_size(len(pieces))
    writer.add_context_length(CONTEXT)
    writer.add_embedding_length(dim)
    writer.add_block_count(layers)
    writer.add_feed_forward_length(hidden)
    writer.add_rope_dimension_count(dim // heads)
    writer.add_head_count(heads)
    writer.add_head_count_kv(kv_heads)
    writer.add_layer_norm_rms_eps(1e-5)
    writer.add_rope_freq_base(500000.0 if arch == 'llama' else 1000000.0)
    if linear_rope is not None:
        writer.add_rope_scaling_type(gguf.RopeScalingType.LINEAR)
        writer.add_rope_scaling_factor(linear_rope)
    writer.add_tokenizer_model('gpt2')
    writer.add_tokenizer_pre(pre)
    writer.add_token_list(pieces)
    writer.add_token_types([3 if p in BPE_SPECIALS else 1 for p in pieces])
    writer.add_token_merges(merges)
    writer.add_bos_token_id(pieces.index('<|begin_of_text|>'))
    writer.add_eos_token_id(pieces.index('<|end_of_text|>'))
    writer.add_eot_token_id(pieces.index('<|im_end|>'))
    writer.add_add_bos_token(True)
    writer.add_chat_template(CHATML_TEMPLATE)
    kv_dim = dim // heads * kv_heads
    # Special tokens and pieces that are not whole printable UTF-8 get small rows, as byte
    # tokens in the llama files: greedy text stays text (llama-server refuses other output).
    alphabet = [c for c in range(ord('!'), ord('~') + 1)] + [c for c in range(0xA1, 0xAD)] + [c for c in range(0xAE, 0x100)]
    codes = alphabet + [256 + n for n in range(256 - len(alphabet))]
    byte_of = {chr(code): byte for code, byte in zip(codes, alphabet + [b for b in range(256) if b not in alphabet])}

    def printable(piece):
        try:
            text = bytes(byte_of[c] for c in piece).decode('utf-8')
        except (KeyError, UnicodeDecodeError):
            return False
        return all(c == '\n' or c >= ' ' for c in text)

    rows = np.array([1.0 if p not in BPE_SPECIALS and printable(p) else 0.05 for p in pieces], dtype=np.float32)
    matrix(writer, 'token_embd.weight', len(pieces), dim, 'F32', 1.0, rows)
    vector(writer, 'output_norm.weight', dim)
    matrix(writer, 'output.weight', len(pieces), dim, 'F32', 1.0, rows)
    if rope_freqs:
        # Llama 3.1's scaling as llama.cpp stores it: one divisor per rotary pair.
        writer.add_tensor('rope_freqs.weight', np.linspace(1, 8, dim // heads // 2).astype(np.float32))
    for i in range(layers):
        vector(writer, f'blk.{i}.attn_norm.weight', dim)
        matrix(writer, f'blk.{i}.attn_q.weight', dim, dim, 'F32', 0.3)
        matrix(writer, f'blk.{i}.attn_k.weight', kv_dim, dim, 'F32', 0.3)
        matrix(writer, f'blk.{i}.attn_v.weight', kv_dim, dim, 'F32', 0.2)
        if arch == 'qwen2':
            for part, size in (('q', dim), ('k', kv_dim), ('v', kv_dim)):
                writer.add_tensor(f'blk.{i}.attn_{part}.bias', (0.5 * rng.standard_normal(size)).astype(np.float32))
        matrix(writer, f'blk.{i}.attn_output.weight', dim, dim, 'F32', 0.2)
        vector(writer, f'blk.{i}.ffn_norm.weight', dim)
        matrix(writer, f'blk.{i}.ffn_gate.weight', hidden, dim, 'F32', 0.2)
        matrix(writer, f'blk.{i}.ffn_down.weight', dim, hidden, 'F32', 0.2)
        matrix(writer, f'blk.{i}.ffn_up.weight', hidden, dim, 'F32', 0.2)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def main():
    write_block_fixtures()
    # As llama.cpp's Q4_K_M recipe: Q6_K for the head and half the attn_v / ffn_down, Q4_K elsewhere.
    write_model(os.path.join(OUT, 'tiny-llama-kquants.gguf'), {
        'token_embd': 'Q4_K', 'output': 'Q6_K',
        'attn_q': 'Q4_K', 'attn_k': 'Q4_K', 'attn_v': ['Q6_K', 'Q4_K'], 'attn_output': 'Q4_K',
        'ffn_gate': 'Q4_K', 'ffn_up': 'Q4_K', 'ffn_down': ['Q6_K', 'Q5_K'],
    }, rope_theta=500000.0, tied=False, file_type=15, name='tiny-llama-kquants')
    write_model(os.path.join(OUT, 'tiny-llama-legacy.gguf'), {
        'token_embd': 'Q8_0',
        'attn_q': ['Q4_0', 'F16'], 'attn_k': ['Q4_1', 'BF16'], 'attn_v': ['Q8_0', 'Q5_0'],
        'attn_output': ['F16', 'Q5_1'], 'ffn_gate': ['BF16', 'Q4_0'], 'ffn_up': ['Q5_0', 'Q8_0'],
        'ffn_down': ['F32', 'Q4_1'],
    }, rope_theta=10000.0, tied=True, file_type=7, name='tiny-llama-legacy')
    write_f32_twin(os.path.join(OUT, 'tiny-llama-kquants.gguf'), os.path.join(OUT, 'tiny-llama-kquants-f32.gguf'))
    write_bpe_model(os.path.join(OUT, 'tiny-llama-bpe.gguf'))
    write_bpe_model(os.path.join(OUT, 'tiny-qwen2.gguf'), arch='qwen2', pre='qwen2', linear_rope=4.0)
    write_bpe_model(os.path.join(OUT, 'tiny-llama3-rope-freqs.gguf'), rope_freqs=True)
    # Every projection of one quantized type (q/k/v and gate/up fused alike), untied: each legacy
    # type executed quantized (the file above fuses several with float rows, which stay float32).
    write_model(os.path.join(OUT, 'tiny-llama-legacy-quantized.gguf'), {
        'token_embd': 'Q5_1', 'output': 'Q4_0',
        'attn_q': ['Q5_0', 'Q4_0'], 'attn_k': ['Q5_0', 'Q4_0'], 'attn_v': ['Q5_0', 'Q4_0'],
        'attn_output': ['Q4_1', 'Q5_0'], 'ffn_gate': ['Q5_1', 'Q4_1'], 'ffn_up': ['Q5_1', 'Q4_1'],
        'ffn_down': ['Q8_0', 'Q5_1'],
    }, rope_theta=10000.0, tied=False, file_type=7, name='tiny-llama-legacy-quantized')


if __name__ == '__main__':
    main()
