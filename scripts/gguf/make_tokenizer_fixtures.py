"""
Makes the SentencePiece tokenizer fixture of test/gguf/gguf-spm-vocab.test.ts, with its
references from sentencepiece itself and from llama.cpp:

- tiny-spm-pieces.gguf: a 1-layer F32 `llama` model (so llama-server can load it) whose
  vocabulary is a hand-made SentencePiece BPE model in Gemma's layout (no dummy prefix,
  byte fallback, <pad>/<eos>/<bos>/<unk> as ids 0-3): pieces whose halves are not pieces
  ("\\n\\n" without "\\n", "日本" without either character, as gemma2-style vocabularies
  have), a piece no merge reaches ("xyz"), pieces of equal halves competing by score, and
  unused pieces (`<unused0>`, `[PAD300]`, as padded vocabularies carry);
- tiny-spm-pieces.json: for each test text, sentencepiece's ids (the same pieces loaded as
  a sentencepiece ModelProto) and llama.cpp's (libllama of the node-llama-cpp bundle, through
  scripts/gguf/llama-vocab-probe.mjs), and llama.cpp's rendering of chosen ids (control,
  unknown, unused, byte and normal pieces) without and with special tokens.

Usage: /work/venv/bin/python scripts/gguf/make_tokenizer_fixtures.py
  (gguf-py from llama.cpp's sources: $LLAMA_CPP_SRC or ~/.cache/edge-llm/llama-server/src;
  node-llama-cpp from $NODE_LLAMA_CPP_DIR or ~/.cache/edge-llm/llama-server/npm)
"""
import json
import os
import subprocess
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = os.path.join(ROOT, 'test', 'fixtures', 'gguf')
LLAMA_CPP = os.environ.get('LLAMA_CPP_SRC', os.path.join(os.path.expanduser('~'), '.cache', 'edge-llm', 'llama-server', 'src'))
sys.path.insert(0, os.path.join(LLAMA_CPP, 'gguf-py'))
import gguf  # noqa: E402
from sentencepiece import SentencePieceProcessor, sentencepiece_model_pb2 as sp_pb  # noqa: E402

NORMAL, UNKNOWN, CONTROL, USER_DEFINED, UNUSED, BYTE = 1, 2, 3, 4, 5, 6
SPACE = '\u2581'

# (piece, type); normal pieces get decreasing scores in this order (earlier merges first).
SPECIAL = [('<pad>', CONTROL), ('<eos>', CONTROL), ('<bos>', CONTROL), ('<unk>', UNKNOWN)]
BYTES = [(f'<0x{b:02X}>', BYTE) for b in range(256)]
NORMAL_PIECES = [
    # single characters (no "\n", "日", "本", "x", "y", "z" among them)
    'a', 'b', 'c', 'd', 'e', 'h', 'l', 'o', 'r', 'w', SPACE,
    # reached from characters that are not pieces
    '\n\n', '\n\n\n', '日本', 'c\n',
    # ordinary merges
    'he', 'll', 'hell', 'hello', SPACE + 'w', 'or', SPACE + 'wor', 'ld', SPACE + 'world', SPACE + SPACE,
    # "aab": "ab" outscores "aa", so a+(ab); "bba": "bb" outscores "ba"
    'ab', 'aa', 'bb', 'ba', 'aab',
    # no merge reaches it: neither "xy" nor "yz" is a piece and x, y, z are not pieces
    'xyz',
]
UNUSED_PIECES = [('<unused0>', UNUSED), ('[PAD300]', UNUSED)]

TEXTS = [
    'a\n\nb', 'a\n\n\nb', 'a\n\n\n\n\nb', '\n', 'c\n\nd', '日本', '日本日', 'hello world', 'hello  world',
    ' hello', 'aab', 'aaab', 'bba', 'xyz', 'xyzab', 'héllo wörld', '<unused0>', '[PAD300]', 'ab<eos>ab',
]


def vocabulary():
    pieces = SPECIAL + BYTES + [(p, NORMAL) for p in NORMAL_PIECES] + UNUSED_PIECES
    scores = []
    rank = 0
    for piece, kind in pieces:
        if kind == NORMAL:
            rank += 1
            scores.append(-float(rank))
        else:
            scores.append(0.0)
    return [p for p, _ in pieces], scores, [k for _, k in pieces]


def sentencepiece_model(pieces, scores, types):
    model = sp_pb.ModelProto()
    spm_type = {NORMAL: 1, UNKNOWN: 2, CONTROL: 3, USER_DEFINED: 4, UNUSED: 5, BYTE: 6}
    for piece, score, kind in zip(pieces, scores, types):
        entry = model.pieces.add()
        entry.piece, entry.score, entry.type = piece, score, spm_type[kind]
    model.trainer_spec.model_type = sp_pb.TrainerSpec.BPE
    model.trainer_spec.vocab_size = len(pieces)
    model.trainer_spec.byte_fallback = True
    model.trainer_spec.pad_id, model.trainer_spec.eos_id, model.trainer_spec.bos_id, model.trainer_spec.unk_id = 0, 1, 2, 3
    model.normalizer_spec.name = 'identity'
    model.normalizer_spec.add_dummy_prefix = False
    model.normalizer_spec.remove_extra_whitespaces = False
    model.normalizer_spec.escape_whitespaces = True
    processor = SentencePieceProcessor()
    processor.LoadFromSerializedProto(model.SerializeToString())
    return processor


def write_gguf(path, pieces, scores, types):
    rng = np.random.default_rng(20261205)
    dim, hidden, heads = 16, 32, 2
    writer = gguf.GGUFWriter(path, 'llama')
    writer.add_name('tiny-spm-pieces')
    writer.add_file_type(0)
    writer.add_vocab_size(len(pieces))
    writer.add_context_length(64)
    writer.add_embedding_length(dim)
    writer.add_block_count(1)
    writer.add_feed_forward_length(hidden)
    writer.add_rope_dimension_count(dim // heads)
    writer.add_head_count(heads)
    writer.add_head_count_kv(heads)
    writer.add_layer_norm_rms_eps(1e-6)
    writer.add_rope_freq_base(10000.0)
    writer.add_tokenizer_model('llama')
    writer.add_tokenizer_pre('default')
    writer.add_token_list(pieces)
    writer.add_token_scores(scores)
    writer.add_token_types(types)
    writer.add_pad_token_id(0)
    writer.add_eos_token_id(1)
    writer.add_bos_token_id(2)
    writer.add_unk_token_id(3)
    writer.add_add_bos_token(True)
    writer.add_add_eos_token(False)
    writer.add_add_space_prefix(False)
    f32 = lambda *shape: (0.1 * rng.standard_normal(shape)).astype(np.float32)
    writer.add_tensor('token_embd.weight', f32(len(pieces), dim))
    writer.add_tensor('output_norm.weight', np.ones(dim, dtype=np.float32))
    writer.add_tensor('blk.0.attn_norm.weight', np.ones(dim, dtype=np.float32))
    for name in ('attn_q', 'attn_k', 'attn_v', 'attn_output'):
        writer.add_tensor(f'blk.0.{name}.weight', f32(dim, dim))
    writer.add_tensor('blk.0.ffn_norm.weight', np.ones(dim, dtype=np.float32))
    writer.add_tensor('blk.0.ffn_gate.weight', f32(hidden, dim))
    writer.add_tensor('blk.0.ffn_up.weight', f32(hidden, dim))
    writer.add_tensor('blk.0.ffn_down.weight', f32(dim, hidden))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def llama_cpp_references(path, texts, ids):
    """llama.cpp's tokenize / token_to_piece on the file's vocabulary (scripts/gguf/llama-vocab-probe.mjs)."""
    npm = os.environ.get('NODE_LLAMA_CPP_DIR', os.path.join(os.path.expanduser('~'), '.cache', 'edge-llm', 'llama-server', 'npm'))
    probe = os.path.join(npm, 'llama-vocab-probe.mjs')  # resolved from there, where node-llama-cpp is installed
    with open(os.path.join(ROOT, 'scripts', 'gguf', 'llama-vocab-probe.mjs')) as source, open(probe, 'w') as copy:
        copy.write(source.read())
    try:
        result = subprocess.run(['node', probe, path, json.dumps({'texts': texts, 'ids': ids})], check=True, capture_output=True, text=True, cwd=npm)
    finally:
        os.remove(probe)
    return json.loads(result.stdout.strip().splitlines()[-1])


def main():
    pieces, scores, types = vocabulary()
    processor = sentencepiece_model(pieces, scores, types)
    path = os.path.join(OUT, 'tiny-spm-pieces.gguf')
    write_gguf(path, pieces, scores, types)
    reference = {
        'texts': TEXTS,
        'sentencepiece': {text: processor.encode(text) for text in TEXTS},
    }
    index = {p: i for i, p in enumerate(pieces)}
    detokenize_ids = [index['<eos>'], index['<unk>'], index['<unused0>'], index['[PAD300]'], index['<0x0A>'], index['\n\n'], index['hello']]
    reference['detokenize_ids'] = detokenize_ids
    llama_cpp = llama_cpp_references(path, TEXTS, detokenize_ids)
    reference['llama_cpp_tokenize'] = llama_cpp['tokenize']
    reference['llama_cpp_detokenize'] = llama_cpp['detokenize']
    reference['llama_cpp_detokenize_special'] = llama_cpp['detokenize_special']
    with open(os.path.join(OUT, 'tiny-spm-pieces.json'), 'w') as out:
        json.dump(reference, out, ensure_ascii=False, indent=1)
        out.write('\n')


if __name__ == '__main__':
    main()
