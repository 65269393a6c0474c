"""
Block fixtures of the low-bit ggml types (test/fixtures/gguf/blocks/<TYPE>.bin and .f32),
with ggml's OWN dequantization as the reference: dequantize_row_* of libggml-base.so, the
prebuilt ggml of the node-llama-cpp bundle (the same llama.cpp release whose sources
scripts/peer/build-llama-server.sh unpacks), called through ctypes. The `gguf` Python
package's dequantization (llama.cpp's numpy mirror) is checked to agree bit for bit too.

Blocks are seeded random bytes with their float16 scale fields set to finite values, the
first three blocks' scale zero, negative and subnormal (as make_fixtures.py does for the
other types). Random bytes are valid blocks of every type: each grid index, sign pattern and
packed scale takes every value its bits can hold.

Usage: /work/venv/bin/python scripts/gguf/make_quant_blocks.py
  ($GGML_BASE_LIB or the node-llama-cpp bundle's libggml-base.so; gguf-py from
  $LLAMA_CPP_SRC or ~/.cache/edge-llm/llama-server/src)
"""
import ctypes
import glob
import os
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = os.path.join(ROOT, 'test', 'fixtures', 'gguf', 'blocks')
CACHE = os.path.join(os.path.expanduser('~'), '.cache', 'edge-llm', 'llama-server')
LLAMA_CPP = os.environ.get('LLAMA_CPP_SRC', os.path.join(CACHE, 'src'))
sys.path.insert(0, os.path.join(LLAMA_CPP, 'gguf-py'))
import gguf  # noqa: E402
from gguf import GGMLQuantizationType as T, quants  # noqa: E402


def ggml_base():
    path = os.environ.get('GGML_BASE_LIB') or next(iter(glob.glob(os.path.join(CACHE, 'npm', 'node_modules', '@node-llama-cpp', 'linux-x64', 'bins', '*', 'libggml-base.so'))), None)
    if not path:
        sys.exit('libggml-base.so not found: run scripts/peer/build-llama-server.sh or set GGML_BASE_LIB')
    return ctypes.CDLL(path)


# Byte offsets of each type's float16 scale fields (the first is the one given edge values).
F16_FIELDS = {
    'Q2_K': [80, 82], 'Q3_K': [108], 'IQ4_NL': [0], 'IQ4_XS': [0],
    'IQ2_XXS': [0], 'IQ2_XS': [0], 'IQ2_S': [0], 'IQ3_XXS': [0], 'IQ3_S': [0], 'IQ1_S': [0],
}
TYPES = list(F16_FIELDS) + ['IQ1_M']

rng = np.random.default_rng(20261205)


def random_blocks(name, n_blocks):
    qtype = T[name]
    _, type_size = gguf.GGML_QUANT_SIZES[qtype]
    raw = rng.integers(0, 256, size=(n_blocks, type_size), dtype=np.uint8)
    if name == 'IQ1_M':
        # IQ1_M's f16 scale is spread over the top nibbles of its four u16 scale words: any
        # bits are a float16, so keep the exponent finite (bits 14..10 of the f16 not all set).
        scales = raw[:, 48:56].view(np.uint16).copy()
        scale_f16 = (scales[:, 0] >> 12) | ((scales[:, 1] >> 8) & 0xF0) | ((scales[:, 2] >> 4) & 0xF00) | (scales[:, 3] & 0xF000)
        scale_f16 = scale_f16 & ~np.uint16(0x4000)  # exponent below 16: finite
        for k in range(4):
            scales[:, k] = (scales[:, k] & 0x0FFF) | (((scale_f16 >> (4 * k)) & 0xF) << 12)
        raw[:, 48:56] = scales.view(np.uint8).reshape(n_blocks, 8)
        return raw
    for offset in F16_FIELDS[name]:
        raw[:, offset:offset + 2] = (rng.standard_normal(n_blocks) * 0.01).astype(np.float16).view(np.uint8).reshape(n_blocks, 2)
    d = F16_FIELDS[name][0]
    for block, value in enumerate([0.0, -0.5, 3e-7]):
        raw[block, d:d + 2] = np.array([value], dtype=np.float16).view(np.uint8)
    return raw


def main():
    lib = ggml_base()
    os.makedirs(OUT, exist_ok=True)
    for name in TYPES:
        qtype = T[name]
        block_size, _ = gguf.GGML_QUANT_SIZES[qtype]
        n_blocks = max(4, 1024 // block_size)
        raw = np.ascontiguousarray(random_blocks(name, n_blocks).reshape(-1))
        count = n_blocks * block_size
        out = np.zeros(count, dtype=np.float32)
        dequantize_row = getattr(lib, f'dequantize_row_{name.lower() if name.startswith("IQ") else name[:2].lower() + name[2:]}')
        dequantize_row.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64]
        dequantize_row(raw.ctypes.data, out.ctypes.data, count)
        mirror = quants.dequantize(raw, qtype).astype(np.float32).reshape(-1)
        differ = np.flatnonzero(mirror.view(np.uint32) != out.view(np.uint32))
        print(f'{name}: {count} elements, ggml vs gguf-py bit differences: {len(differ)}')
        raw.tofile(os.path.join(OUT, f'{name}.bin'))
        out.tofile(os.path.join(OUT, f'{name}.f32'))


if __name__ == '__main__':
    main()
