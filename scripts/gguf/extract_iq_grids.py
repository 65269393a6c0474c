"""
Writes src/gguf/iq-grids.ts: ggml's lookup tables for the IQ types (iq2xxs_grid, iq2xs_grid,
iq2s_grid, iq3xxs_grid, iq3s_grid, iq1s_grid, ksigns_iq2xs), read from ggml-common.h of the
llama.cpp sources (scripts/peer/build-llama-server.sh unpacks them from the node-llama-cpp
bundle), as base64 of their little-endian bytes: data, decoded once when first used.

Usage: python3 scripts/gguf/extract_iq_grids.py [path/to/ggml-common.h]
"""
import base64
import os
import re
import struct
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HEADER = sys.argv[1] if len(sys.argv) > 1 else os.path.expanduser('~/.cache/edge-llm/llama-server/src/ggml/src/ggml-common.h')
TABLES = {'iq2xxs_grid': 256, 'iq2xs_grid': 512, 'iq2s_grid': 1024, 'iq3xxs_grid': 256, 'iq3s_grid': 512, 'iq1s_grid': 2048, 'ksigns_iq2xs': 128}
FORMATS = {'uint64_t': '<Q', 'uint32_t': '<I', 'uint8_t': '<B'}

text = open(HEADER, encoding='utf-8').read()
out = ['/**',
       ' * ggml\'s lookup tables for the IQ types, as data: base64 of their little-endian bytes, written by',
       ' * scripts/gguf/extract_iq_grids.py from ggml-common.h (llama.cpp, MIT). Each grid entry is 8 (or',
       ' * 4) unsigned bytes of magnitudes (iq1s: signed bytes -1, 0, 1); ksigns_iq2xs gives a 7-bit sign',
       ' * index its 8-bit even-parity sign mask.',
       ' */',
       '']
for name, count in TABLES.items():
    match = re.search(r'GGML_TABLE_BEGIN\((\w+), ' + name + r', (\w+)\)(.*?)GGML_TABLE_END\(\)', text, re.S)
    ctype, body = match.group(1), match.group(3)
    values = [int(v, 0) for v in re.findall(r'0x[0-9a-fA-F]+|\b\d+\b', re.sub(r'//.*', '', body))]
    assert len(values) == count, (name, len(values))
    raw = b''.join(struct.pack(FORMATS[ctype], v) for v in values)
    js = ''.join(w[:1].upper() + w[1:] for w in name.split('_'))
    js = js[0].lower() + js[1:]
    out.append(f'/** {name}[{count}] ({ctype}). */')
    out.append(f"export const {js}Base64 =\n  '{base64.b64encode(raw).decode()}';")
    out.append('')
with open(os.path.join(ROOT, 'src', 'gguf', 'iq-grids.ts'), 'w') as f:
    f.write('\n'.join(out))
