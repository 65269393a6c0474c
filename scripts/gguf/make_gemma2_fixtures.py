"""
Makes the `gemma2` GGUF test fixtures (committed under test/fixtures/gguf/) the way real
Gemma 2 GGUF files are made: a seeded random-weight transformers Gemma2ForCausalLM with a
SentencePiece tokenizer in Gemma's layout, saved as a Hugging Face folder and converted by
llama.cpp's own convert_hf_to_gguf.py (which adds 1 to every RMSNorm weight, drops
query_pre_attn_scalar, writes the soft-capping values and the sliding window).

- tiny-gemma2.gguf: F32 (--outtype f32);
- tiny-gemma2-q8_0.gguf: the same model with its matrices in Q8_0 (--outtype q8_0);
- tiny-gemma2-reference.json: transformers' (Gemma2ForCausalLM, eager attention) logits at
  every position of a few greedy generations, the greedy ids themselves, and each step's
  margin between the best and second-best logit.

Model: 4 layers (sliding, full, sliding, full), hidden 64, 4 query heads of 32 (q is 128
wide: head_dim * heads != hidden, as in gemma-2-2b / 9b), 2 key-value heads, GELU-tanh MLP
of 128, tied head, a sliding window of 16 positions on layers 0 and 2 (of 512: every prompt
and generation the tests take runs past it), attention soft-cap 20 (real files 50: a smaller
one bites on these small scores), final soft-cap 30, query_pre_attn_scalar = head_dim
(llama.cpp derives the query scale from head_dim unless the file has 46 layers).

Vocabulary: a 512-piece SentencePiece BPE model trained here on a few paragraphs with
Gemma's options (byte fallback, no dummy prefix, digits split, identity normalisation,
<pad>/<eos>/<bos>/<unk> as ids 0-3, <start_of_turn>/<end_of_turn> user symbols that
tokenizer_config.json marks special, Gemma's chat template).

Well conditioned: the weights' seed is chosen (SEED below, found by `--search N`) so that at
every greedy step of the reference generations and of the prompts the HTTP tests send, the
best logit beats the second by at least MIN_MARGIN (reported in the JSON): greedy agreement
with another engine then means the same model, not a coin toss on rounding.

Usage: /work/venv/bin/python scripts/gguf/make_gemma2_fixtures.py [--search N]
  (llama.cpp's sources: $LLAMA_CPP_SRC or ~/.cache/edge-llm/llama-server/src, unpacked by
  scripts/peer/build-llama-server.sh)
"""
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import sentencepiece as spm
import torch

torch.set_num_threads(1)
from transformers import Gemma2Config, Gemma2ForCausalLM

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = os.path.join(ROOT, 'test', 'fixtures', 'gguf')
LLAMA_CPP = os.environ.get('LLAMA_CPP_SRC', os.path.join(os.path.expanduser('~'), '.cache', 'edge-llm', 'llama-server', 'src'))

SEED = 4  # the best of `--search 40`: smallest margin 0.116
MIN_MARGIN = 0.1

CORPUS = """Once upon a time, there was a little girl named Lily. She loved to play outside in the sunshine.
One day, she saw a big dog in the park. The dog was friendly and wagged its tail! "Hello," said Lily.
They played together until 5 o'clock, then 6, then 1234 minutes later they'd gone home. It's late, isn't it?
Tom and Lily went to the store to buy 3 apples, 12 eggs and 250 grams of butter.
The little dog ran to the tree and barked at the bird. The bird sang a happy song and flew away.
Numbers: 0 1 2 3 4 5 6 7 8 9 10 100 1000 2026. Symbols: a+b=c, (x), [y], {z}, #tag, @name, 50% off!
Café, naïve, über, 日本語のテキスト, emoji 🙂 and tabs\tand\nnew lines.
Write a short story about a cat. Tell me about the sea. What is the color of the sky? Answer briefly.
"""

# Gemma's template (google/gemma-2-2b-it), verbatim.
CHAT_TEMPLATE = (
    "{{ bos_token }}{% if messages[0]['role'] == 'system' %}{{ raise_exception('System role not supported') }}{% endif %}"
    "{% for message in messages %}{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}"
    "{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}"
    "{% if (message['role'] == 'assistant') %}{% set role = 'model' %}{% else %}{% set role = message['role'] %}{% endif %}"
    "{{ '<start_of_turn>' + role + '\n' + message['content'] | trim + '<end_of_turn>\n' }}{% endfor %}"
    "{% if add_generation_prompt %}{{'<start_of_turn>model\n'}}{% endif %}"
)
TURN_TOKENS = ['<start_of_turn>', '<end_of_turn>']

# What the tests send (test/gguf/gemma2.test.ts, test/gguf/gemma2-llama-server.test.ts).
REFERENCE_PROMPTS = ['Once upon a time, there was a little girl named Lily.', 'Tom and Lily went to the store to buy']
HTTP_PROMPTS = ['Once upon a time', 'The little dog', 'Lily and Tom went to the park. They', 'One day, a big']
REFERENCE_NEW_TOKENS = 20
HTTP_MAX_TOKENS = 24

DIMS = dict(hidden_size=64, intermediate_size=128, num_hidden_layers=4, num_attention_heads=4, num_key_value_heads=2,
            head_dim=32, max_position_embeddings=512, sliding_window=16)


def train_tokenizer(folder):
    corpus = os.path.join(folder, 'corpus.txt')
    with open(corpus, 'w', encoding='utf-8') as f:
        f.write(CORPUS * 4)
    spm.SentencePieceTrainer.train(
        input=corpus, model_prefix=os.path.join(folder, 'tokenizer'), model_type='bpe', vocab_size=512,
        byte_fallback=True, add_dummy_prefix=False, split_digits=True, normalization_rule_name='identity',
        remove_extra_whitespaces=False, allow_whitespace_only_pieces=True, character_coverage=1.0,
        pad_id=0, eos_id=1, bos_id=2, unk_id=3, pad_piece='<pad>', eos_piece='<eos>', bos_piece='<bos>', unk_piece='<unk>',
        user_defined_symbols=TURN_TOKENS, hard_vocab_limit=False, minloglevel=2, num_threads=1)
    os.remove(corpus)
    return spm.SentencePieceProcessor(model_file=os.path.join(folder, 'tokenizer.model'))


def make_model(sp, seed):
    vocab = sp.vocab_size()
    config = Gemma2Config(
        vocab_size=vocab, **DIMS, query_pre_attn_scalar=DIMS['head_dim'], attn_logit_softcapping=20.0,
        final_logit_softcapping=30.0, rms_norm_eps=1e-6, rope_theta=10000.0, hidden_activation='gelu_pytorch_tanh',
        tie_word_embeddings=True, pad_token_id=0, eos_token_id=1, bos_token_id=2, attn_implementation='eager')
    torch.manual_seed(seed)
    model = Gemma2ForCausalLM(config).eval()
    generator = torch.Generator().manual_seed(seed)
    normal = lambda shape, std: torch.randn(shape, generator=generator) * std
    with torch.no_grad():
        for name, param in model.named_parameters():
            if name == 'model.norm.weight':
                # A final norm of about 4 spreads the logits (std ~5) while the residual
                # stream stays small next to what each layer adds (embedding rows of 0.15 * 8).
                param.copy_(3 + normal(param.shape, 0.1))  # transformers multiplies by (1 + w)
            elif name.endswith('norm.weight'):
                param.copy_(normal(param.shape, 0.1))
            elif 'embed_tokens' in name:
                # Byte and special pieces get small rows: greedy text stays whole UTF-8 text
                # (llama-server refuses other output) and rarely ends on a control token.
                rows = torch.ones(vocab)
                for i in range(vocab):
                    if sp.is_byte(i) or sp.is_control(i) or sp.is_unknown(i) or sp.id_to_piece(i) in TURN_TOKENS:
                        rows[i] = 0.05
                param.copy_(normal(param.shape, 0.15) * rows[:, None])
            elif 'q_proj' in name or 'k_proj' in name:
                param.copy_(normal(param.shape, 0.35))
            else:
                param.copy_(normal(param.shape, 0.15))
    return model


def with_specials(sp, text):
    """Ids of `text` as llama.cpp tokenizes a rendered prompt: special tokens matched, each run between them encoded alone."""
    ids, run = [], ''
    specials = {'<bos>': sp.bos_id(), **{t: sp.piece_to_id(t) for t in TURN_TOKENS}}
    while text:
        special = next((s for s in specials if text.startswith(s)), None)
        if special is None:
            run, text = run + text[0], text[1:]
            continue
        ids += sp.encode(run) if run else []
        ids.append(specials[special])
        run, text = '', text[len(special):]
    return ids + (sp.encode(run) if run else [])


def conversations(prompt):
    """The chats the HTTP test sends: one user turn, and alternating turns."""
    return [[{'role': 'user', 'content': prompt}],
            [{'role': 'user', 'content': 'Tell me a story.'}, {'role': 'assistant', 'content': 'Once upon a time'},
             {'role': 'user', 'content': prompt}]]


def chat_ids(sp, messages):
    rendered = '<bos>' + ''.join(f"<start_of_turn>{'model' if m['role'] == 'assistant' else m['role']}\n{m['content'].strip()}<end_of_turn>\n" for m in messages)
    return with_specials(sp, rendered + '<start_of_turn>model\n')


def greedy(model, ids, steps):
    """Greedy ids after `ids`, the logits at every position of the whole sequence, each new token's margin."""
    sequence = list(ids)
    with torch.no_grad():
        for _ in range(steps):
            logits = model(torch.tensor([sequence])).logits[0, -1]
            sequence.append(int(torch.argmax(logits)))
        logits = model(torch.tensor([sequence])).logits[0].float().numpy()
    top2 = np.sort(logits[len(ids) - 1:len(sequence) - 1], axis=-1)[:, -2:]
    return sequence[len(ids):], logits, (top2[:, 1] - top2[:, 0])


def scenarios(sp):
    for prompt in REFERENCE_PROMPTS:
        yield 'reference', prompt, [sp.bos_id()] + sp.encode(prompt), REFERENCE_NEW_TOKENS
    for prompt in HTTP_PROMPTS:
        yield 'completion', prompt, [sp.bos_id()] + sp.encode(prompt), HTTP_MAX_TOKENS
        for messages in conversations(prompt):
            yield 'chat', prompt, chat_ids(sp, messages), HTTP_MAX_TOKENS


def min_margin(model, sp):
    """The smallest best-vs-second logit gap over every greedy step the tests take (up to an end-of-generation token)."""
    stops = {sp.eos_id(), sp.piece_to_id('<end_of_turn>')}
    worst = float('inf')
    with torch.no_grad():
        for _, _, ids, steps in scenarios(sp):
            out = model.generate(torch.tensor([ids]), max_new_tokens=steps, do_sample=False, output_logits=True,
                                 return_dict_in_generate=True, pad_token_id=0, eos_token_id=None)
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


def convert(folder, outfile, outtype):
    env = dict(os.environ, PYTHONPATH=os.path.join(LLAMA_CPP, 'gguf-py'), NO_LOCAL_GGUF='')
    subprocess.run([sys.executable, os.path.join(LLAMA_CPP, 'convert_hf_to_gguf.py'), folder, '--outfile', outfile,
                    '--outtype', outtype, '--model-name', os.path.basename(outfile)[:-5]], check=True, env=env,
                   stdout=subprocess.DEVNULL)


def main():
    with tempfile.TemporaryDirectory() as folder:
        sp = train_tokenizer(folder)
        if '--search' in sys.argv:
            count = int(sys.argv[sys.argv.index('--search') + 1])
            found = []
            for seed in range(count):
                found.append((min_margin(make_model(sp, seed), sp), seed))
                print(f'seed {seed}: smallest greedy margin {found[-1][0]:.4f}', flush=True)
            print('best:', max(found))
            return
        model = make_model(sp, SEED)
        worst = min_margin(model, sp)
        assert worst >= MIN_MARGIN, f'seed {SEED}: smallest margin {worst} < {MIN_MARGIN}'
        write_hf_folder(model, sp, folder)
        convert(folder, os.path.join(OUT, 'tiny-gemma2.gguf'), 'f32')
        convert(folder, os.path.join(OUT, 'tiny-gemma2-q8_0.gguf'), 'q8_0')
        reference = {'seed': SEED, 'smallest_http_margin': round(worst, 5), 'generations': []}
        for kind, prompt, ids, steps in scenarios(sp):
            if kind != 'reference':
                continue
            new, logits, margins = greedy(model, ids, steps)
            reference['generations'].append({
                'prompt': prompt, 'prompt_ids': ids, 'greedy_ids': new,
                'margins': [round(float(m), 5) for m in margins],
                # Rows for positions 0 .. len(prompt) + len(new) - 2: each predicts the next id.
                'logits': [[float(f'{v:.6g}') for v in row] for row in logits[:len(ids) + len(new) - 1]],
            })
        # Soft-capping must show: the same model without each cap gives other logits.
        ids = torch.tensor([reference['generations'][0]['prompt_ids']])
        with torch.no_grad():
            base = model(ids).logits
            for key in ('attn_logit_softcapping', 'final_logit_softcapping'):
                saved = getattr(model.config, key)
                setattr(model.config, key, None)
                for layer in model.model.layers:
                    layer.self_attn.attn_logit_softcapping = model.config.attn_logit_softcapping
                reference[f'max_logit_change_without_{key}'] = round(float((model(ids).logits - base).abs().max()), 5)
                setattr(model.config, key, saved)
                for layer in model.model.layers:
                    layer.self_attn.attn_logit_softcapping = model.config.attn_logit_softcapping
        # The sliding window must show too: past it, a model without the window gives other logits.
        first = reference['generations'][0]
        ids = torch.tensor([first['prompt_ids'] + first['greedy_ids']])
        with torch.no_grad():
            base = model(ids).logits
            model.config.sliding_window = 10 ** 6
            for layer in model.model.layers:
                layer.self_attn.sliding_window = None
            reference['max_logit_change_without_sliding_window'] = round(float((model(ids).logits - base).abs().max()), 5)
        with open(os.path.join(OUT, 'tiny-gemma2-reference.json'), 'w') as f:
            json.dump(reference, f, separators=(',', ':'))
        print(json.dumps({k: v for k, v in reference.items() if k != 'generations'}))


if __name__ == '__main__':
    main()
