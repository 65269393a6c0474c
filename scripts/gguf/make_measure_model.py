"""
A larger seeded random `llama` GGUF for memory and size figures (not a test fixture: written
to the path given, not committed): make_fixtures.py's Q4_K_M-style model at dim 512, 8
layers, hidden 1536 (25M weights, ~100 MB as float32).

Usage: /path/to/venv/bin/python scripts/gguf/make_measure_model.py out.gguf [Q4_K_M|Q4_0|Q8_0]
"""
import sys

import make_fixtures as fx

fx.TOKENIZER_DIR = fx.os.path.join(fx.ROOT, 'test', 'fixtures', 'stories260K')
fx.DIM, fx.HIDDEN, fx.N_LAYERS, fx.N_HEADS, fx.N_KV_HEADS = 512, 1536, 8, 8, 4
recipe = sys.argv[2] if len(sys.argv) > 2 else 'Q4_K_M'
if recipe == 'Q4_K_M':
    types = {'token_embd': 'Q4_K', 'output': 'Q6_K', 'attn_q': 'Q4_K', 'attn_k': 'Q4_K',
             'attn_v': ['Q6_K', 'Q4_K'] * 4, 'attn_output': 'Q4_K', 'ffn_gate': 'Q4_K', 'ffn_up': 'Q4_K',
             'ffn_down': ['Q6_K', 'Q4_K'] * 4}
else:
    types = {key: recipe for key in ['token_embd', 'output', 'attn_q', 'attn_k', 'attn_v', 'attn_output', 'ffn_gate', 'ffn_up', 'ffn_down']}
fx.write_model(sys.argv[1], types, rope_theta=10000.0, tied=False, file_type=15, name=f'measure-{recipe}')
