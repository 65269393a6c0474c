"""
Low-bit GGUF fixtures made the way users' files are made, and their exact reference:

- a seeded random transformers Qwen3ForCausalLM (hidden 256, so every matrix row is whole
  256-element super-blocks), converted to F32 by llama.cpp's own convert_hf_to_gguf.py
  (make_arch_fixtures.py's tokenizer and converter), then quantized by llama.cpp's own
  llama-quantize (built from the node-llama-cpp bundle's sources against its prebuilt libraries,
  $LLAMA_QUANTIZE) into tiny-qwen3-<type>.gguf for Q2_K, Q3_K_S, Q3_K_M, Q3_K_L, IQ4_NL, IQ4_XS
  and the i-quants IQ3_XXS, IQ3_S, IQ2_XXS, IQ2_XS, IQ2_S, IQ1_S, IQ1_M (llama-quantize mixes
  types per tensor as it does for real models); the i-quants with an importance matrix
  (llama-imatrix's legacy format: each matrix's mean squared input per column) measured
  here with forward hooks on transformers' model over the fixture corpus, as llama-imatrix
  measures it;
- lowbit-logits.json: for each file, transformers' float32 logits after loading every tensor
  of THAT file as ggml's own dequantize_row_* (libggml-base.so, ctypes) makes it: the exact
  float32 reference a correct engine must give for the quantized file.

Usage: /work/venv/bin/python scripts/gguf/make_lowbit_fixtures.py
  (llama-quantize: $LLAMA_QUANTIZE, or built by scripts/peer/build-llama-quantize.sh)
"""
import ctypes
import json
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_arch_fixtures as arch  # noqa: E402
from make_quant_blocks import ggml_base  # noqa: E402

sys.path.insert(0, os.path.join(arch.LLAMA_CPP, 'gguf-py'))
import gguf  # noqa: E402

OUT = arch.OUT
QUANTIZE = os.environ.get('LLAMA_QUANTIZE') or subprocess.run(
    [os.path.join(arch.ROOT, 'scripts', 'peer', 'build-llama-quantize.sh')], check=True, capture_output=True, text=True).stdout.strip()
TYPES = ['Q2_K', 'Q3_K_S', 'Q3_K_M', 'Q3_K_L', 'IQ4_NL', 'IQ4_XS', 'IQ3_XXS', 'IQ3_S', 'IQ2_XXS', 'IQ2_XS', 'IQ2_S', 'IQ1_S', 'IQ1_M']
# llama-quantize refuses these (or quantizes them badly) without an importance matrix.
NEEDS_IMATRIX = {'IQ2_XXS', 'IQ2_XS', 'IQ2_S', 'IQ1_S', 'IQ1_M', 'IQ3_XXS', 'IQ3_S'}
TEXTS = ['Once upon a time, there was a little girl named Lily.', '<|im_start|>user\nThe dog<|im_end|>\n<|im_start|>assistant\n']

HF_NAMES = {
    'token_embd': 'model.embed_tokens', 'output_norm': 'model.norm', 'output': 'lm_head',
    'attn_q': 'self_attn.q_proj', 'attn_k': 'self_attn.k_proj', 'attn_v': 'self_attn.v_proj', 'attn_output': 'self_attn.o_proj',
    'attn_q_norm': 'self_attn.q_norm', 'attn_k_norm': 'self_attn.k_norm', 'attn_norm': 'input_layernorm',
    'ffn_norm': 'post_attention_layernorm', 'ffn_gate': 'mlp.gate_proj', 'ffn_up': 'mlp.up_proj', 'ffn_down': 'mlp.down_proj',
}


def hf_name(gguf_name):
    parts = gguf_name.split('.')
    if parts[0] == 'blk':
        return f'model.layers.{parts[1]}.{HF_NAMES[parts[2]]}.weight'
    return f'{HF_NAMES[parts[0]]}.weight'


def ggml_dequantize(lib, tensor):
    """A GGUF tensor's float32 values as ggml's dequantize_row_* (or the stored floats)."""
    name = tensor.tensor_type.name
    shape = [int(n) for n in reversed(tensor.shape)]
    if name == 'F32':
        return np.array(tensor.data, dtype=np.float32).reshape(shape)
    count = int(np.prod(shape))
    raw = np.ascontiguousarray(np.array(tensor.data).view(np.uint8).reshape(-1))
    out = np.zeros(count, dtype=np.float32)
    symbol = 'dequantize_row_' + (name.lower() if name.startswith(('IQ', 'Q4_0', 'Q4_1', 'Q5_0', 'Q5_1', 'Q8_0')) else name[:2].lower() + name[2:])
    function = getattr(lib, symbol)
    function.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64]
    function(raw.ctypes.data, out.ctypes.data, count)
    return out.reshape(shape)


def write_imatrix(model, sequences, path):
    """llama-imatrix's legacy file: per weight, the sum over calls of each input column's squared activations."""
    inverse = {v: k for k, v in HF_NAMES.items()}
    sums = {}

    def hook(name):
        def record(_module, inputs, _output):
            x = inputs[0].detach().reshape(-1, inputs[0].shape[-1]).double()
            sums[name] = sums.get(name, 0) + (x * x).mean(0).numpy()
        return record

    handles = []
    for name, module in model.named_modules():
        if isinstance(module, torch.nn.Linear) and name != 'lm_head':
            layer, part = name.split('.')[2], '.'.join(name.split('.')[3:])
            handles.append(module.register_forward_hook(hook(f'blk.{layer}.{inverse[part]}.weight')))
    with torch.no_grad():
        for ids in sequences:
            model(torch.tensor([ids]))
    for handle in handles:
        handle.remove()
    with open(path, 'wb') as f:
        f.write(np.int32(len(sums)).tobytes())
        for name, values in sorted(sums.items()):
            encoded = name.encode()
            f.write(np.int32(len(encoded)).tobytes() + encoded)
            f.write(np.int32(len(sequences)).tobytes() + np.int32(len(values)).tobytes())
            f.write(values.astype(np.float32).tobytes())


def main():
    torch.manual_seed(0)
    lib = ggml_base()
    work = tempfile.mkdtemp(prefix='lowbit-fixtures-')
    reference = {'note': 'transformers float32 logits with each file\'s tensors as ggml dequantizes them (scripts/gguf/make_lowbit_fixtures.py)'}
    try:
        from transformers import Qwen3Config, Qwen3ForCausalLM  # noqa: F401
        # make_arch_fixtures.qwen3 builds the tokenizer and a hidden-64 model; the same with hidden 256.
        original = arch.Qwen3Config if hasattr(arch, 'Qwen3Config') else None  # noqa: F841
        import transformers
        real_config = transformers.Qwen3Config

        def wide_config(**kwargs):
            kwargs.update(hidden_size=256, intermediate_size=512, num_hidden_layers=1, num_attention_heads=4, num_key_value_heads=2, head_dim=64)
            return real_config(**kwargs)

        transformers.Qwen3Config = wide_config
        saved_out = arch.OUT
        arch.OUT = work
        try:
            arch.qwen3(work)
        finally:
            transformers.Qwen3Config = real_config
            arch.OUT = saved_out
        hf_dir = os.path.join(work, 'qwen3')
        model = Qwen3ForCausalLM.from_pretrained(hf_dir, torch_dtype=torch.float32).eval()
        from transformers import AutoTokenizer
        tokenizer = AutoTokenizer.from_pretrained(hf_dir)
        sequences = [tokenizer(t)['input_ids'] for t in TEXTS]
        source = os.path.join(work, 'tiny-qwen3.gguf')
        vocab = model.config.vocab_size
        imatrix = os.path.join(work, 'imatrix.dat')
        write_imatrix(model, [tokenizer(line)['input_ids'] for line in arch.CORPUS.splitlines() if line.strip()], imatrix)
        for qtype in TYPES:
            target = os.path.join(OUT, f'tiny-qwen3-{qtype.lower()}.gguf')
            flags = ['--imatrix', imatrix] if qtype in NEEDS_IMATRIX else []
            subprocess.run([QUANTIZE, *flags, source, target, qtype, '1'], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            reader = gguf.GGUFReader(target)
            state = {}
            types = {}
            for tensor in reader.tensors:
                state[hf_name(tensor.name)] = torch.from_numpy(ggml_dequantize(lib, tensor).copy())
                types[tensor.tensor_type.name] = types.get(tensor.tensor_type.name, 0) + 1
            if 'lm_head.weight' not in state:
                state['lm_head.weight'] = state['model.embed_tokens.weight']
            quantized = Qwen3ForCausalLM(model.config).eval()
            missing, unexpected = quantized.load_state_dict(state, strict=False)
            assert not unexpected and all(m == 'lm_head.weight' for m in missing), (missing, unexpected)
            print(f'{qtype}: {types}')
            reference[os.path.basename(target)] = {
                'types': types,
                'sample': arch.sample_ids(vocab),
                'sequences': arch.logits_reference(quantized, sequences, arch.sample_ids(vocab)),
            }
    finally:
        shutil.rmtree(work, ignore_errors=True)
    with open(os.path.join(OUT, 'lowbit-logits.json'), 'w', encoding='utf-8') as f:
        json.dump(reference, f, separators=(',', ':'))
        f.write('\n')


if __name__ == '__main__':
    main()
