"""Trains the 32,000-piece SentencePiece tokenizer the tokenizer and grammar tests use as a
real-world-sized vocabulary, and records what the sentencepiece library itself encodes.

It has Llama 2's tokenizer shape (BPE, byte fallback, digits split, identity normalizer,
dummy prefix, extra whitespace kept, <unk>/<s>/</s> at 0/1/2 then <0x00>..<0xFF>) but is
trained here, on the English documentation and type declarations of the packages that
package-lock.json pins (node_modules/**/*.md and *.d.ts), so the repository can carry it.

Writes test/fixtures/sentencepiece-32k/tokenizer.model and encodings.json (texts and the
ids sentencepiece gives them, BOS first: the reference the tests check the converted
tokenizer against). Run from the repository root after `npm ci`:

    python3 -m venv /tmp/spm && /tmp/spm/bin/pip install sentencepiece protobuf
    /tmp/spm/bin/python scripts/tokenizer/build_sentencepiece_32k.py
"""
import json
import os
import random
import tempfile

import sentencepiece as spm
from sentencepiece import sentencepiece_model_pb2

OUT = os.path.join('test', 'fixtures', 'sentencepiece-32k')
CORPUS_BYTES = 24_000_000
SEED = 29


def corpus_files():
    found = []
    for root, dirs, files in os.walk('node_modules'):
        dirs.sort()
        for name in sorted(files):
            if name.endswith('.md') or name.endswith('.d.ts'):
                found.append(os.path.join(root, name))
    return found


def write_corpus(path):
    total = 0
    with open(path, 'w', encoding='utf-8') as out:
        for file in corpus_files():
            try:
                with open(file, encoding='utf-8') as source:
                    lines = [line.rstrip('\n') for line in source if line.strip()]
            except (UnicodeDecodeError, OSError):
                continue
            for line in lines:
                line = line[:1000]
                out.write(line + '\n')
                total += len(line.encode('utf-8')) + 1
            if total >= CORPUS_BYTES:
                return total
    return total


def random_texts(processor, count, seed, max_pieces):
    """Texts made of random ordinary pieces with spaces, punctuation and non-ASCII mixed in."""
    rng = random.Random(seed)
    pieces = [processor.id_to_piece(i).replace('\u2581', ' ') for i in range(259, 8000)]
    extras = [' ', '  ', '\n', '.', ',', '!', '?', '42', '2026', 'é', '日本', '😀', 'ß', '\t']
    texts = []
    for _ in range(count):
        parts = [rng.choice(pieces) if rng.random() < 0.8 else rng.choice(extras) for _ in range(rng.randint(1, max_pieces))]
        texts.append(''.join(parts))
    return texts


def main():
    os.makedirs(OUT, exist_ok=True)
    with tempfile.TemporaryDirectory() as work:
        corpus = os.path.join(work, 'corpus.txt')
        size = write_corpus(corpus)
        print(f'corpus: {size} bytes')
        spm.SentencePieceTrainer.train(
            input=corpus,
            model_prefix=os.path.join(work, 'sp32k'),
            model_type='bpe',
            vocab_size=32000,
            character_coverage=0.99995,
            byte_fallback=True,
            split_digits=True,
            split_by_unicode_script=True,
            split_by_whitespace=True,
            split_by_number=True,
            allow_whitespace_only_pieces=True,
            max_sentencepiece_length=16,
            max_sentence_length=4192,
            normalization_rule_name='identity',
            add_dummy_prefix=True,
            remove_extra_whitespaces=False,
            unk_id=0, bos_id=1, eos_id=2, pad_id=-1,
            hard_vocab_limit=True,
            shuffle_input_sentence=True,
            seed_sentencepiece_size=1_000_000,
            input_sentence_size=2_000_000,
            num_threads=2,
            minloglevel=1,
        )
        proto = sentencepiece_model_pb2.ModelProto()
        with open(os.path.join(work, 'sp32k.model'), 'rb') as model:
            proto.ParseFromString(model.read())
    # The trainer records its input and output paths: a temporary folder, so the same run would differ.
    proto.trainer_spec.input[:] = ['corpus.txt']
    proto.trainer_spec.model_prefix = 'sp32k'
    data = proto.SerializeToString()
    with open(os.path.join(OUT, 'tokenizer.model'), 'wb') as model:
        model.write(data)

    processor = spm.SentencePieceProcessor(model_proto=data)
    fixed = ['Once upon a time', 'Hello, world!', 'x.toString()', 'constructorE', 'a __proto__ b', 'hasOwnProperty valueOf',
             'function add(a: number, b: number): number { return a + b; }', '  two leading spaces', 'digits 1234567890',
             'naïve café, 日本語 and 😀', 'tab\tand\nnewline']
    texts = fixed + random_texts(processor, 300, SEED, 16)
    encodings = [{'text': text, 'ids': [processor.bos_id()] + processor.encode(text)} for text in texts]
    with open(os.path.join(OUT, 'encodings.json'), 'w', encoding='utf-8') as out:
        head = json.dumps({'sentencepiece': spm.__version__, 'vocab_size': processor.get_piece_size()}, ensure_ascii=False)
        rows = ',\n'.join(json.dumps(row, ensure_ascii=False) for row in encodings)
        out.write(head[:-1] + ', "encodings": [\n' + rows + '\n]}\n')
    print(f'{processor.get_piece_size()} pieces; {len(encodings)} reference encodings')


if __name__ == '__main__':
    main()
