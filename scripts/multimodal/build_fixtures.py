#!/usr/bin/python3
"""
Builds the tiny vision-language fixtures of test/fixtures/multimodal/ and their reference
outputs. Run with Debian's /usr/bin/python3 (torch, onnx, numpy, PIL, jinja2):

    /usr/bin/python3 scripts/multimodal/build_fixtures.py

Two model folders in the layout onnx-community / transformers.js export VLMs:

  smolvlm/  Idefics3 / SmolVLM: onnx/vision_encoder.onnx (pixel_values [b, n, 3, H, W] and
            pixel_attention_mask [b, n, H, W] -> image_features), onnx/embed_tokens.onnx,
            onnx/decoder_model_merged.onnx taking inputs_embeds; SigLIP-style tower, pixel
            shuffle connector, llama decoder; SmolVLM's special tokens and chat template.
  llava/    LLaVA-1.5 style: one fixed-size CLIP-processed image, <image> x N.

Weights are seeded random. The reference is computed here, independently of the
TypeScript code: pixel values by the processor rules (PIL for decoding and resizing, as
transformers' slow image processors do, numpy for the rest), expanded token ids by the
family's prompt rule, and greedy generation with the torch modules (not the ONNX files).
The lm_head carries a bias that keeps greedy output to printable ASCII so the reference
text compares exactly; EOS is never greedy so outputs run to max_tokens.
"""
import json
import math
import os
import struct

import jinja2
import numpy as np
import torch
from PIL import Image

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'test', 'fixtures', 'multimodal')
torch.manual_seed(20261201)
np.random.seed(20261201)


# ---------------------------------------------------------------- tokenizer (byte-level BPE, no merges)

def bytes_to_unicode():
    printable = list(range(33, 127)) + list(range(161, 173)) + list(range(174, 256))
    table, extra = [], 0
    for b in range(256):
        if b in printable:
            table.append(chr(b))
        else:
            table.append(chr(256 + extra))
            extra += 1
    return table


BYTE_CHARS = bytes_to_unicode()


class Tokenizer:
    def __init__(self, specials):
        self.vocab = {c: i for i, c in enumerate(BYTE_CHARS)}
        self.specials = {}
        for s in specials:
            self.specials[s] = len(self.vocab) + len(self.specials)
        self.size = len(self.vocab) + len(self.specials)

    def encode(self, text):
        ids, i = [], 0
        while i < len(text):
            match = next((s for s in sorted(self.specials, key=len, reverse=True) if text.startswith(s, i)), None)
            if match:
                ids.append(self.specials[match])
                i += len(match)
                continue
            j = i
            while j < len(text) and not any(text.startswith(s, j) for s in self.specials):
                j += 1
            ids.extend(text[i:j].encode('utf-8'))  # byte b has id b
            i = j
        return ids

    def decode(self, ids):
        inverse = {v: k for k, v in self.specials.items()}
        out = b''
        for t in ids:
            out += inverse[t].encode() if t in inverse else bytes([t])
        return out.decode('utf-8')

    def files(self, eos, extra_config):
        added = [dict(id=i, content=s, single_word=False, lstrip=False, rstrip=False, normalized=False, special=True)
                 for s, i in self.specials.items()]
        tokenizer_json = {
            'version': '1.0', 'truncation': None, 'padding': None, 'added_tokens': added,
            'normalizer': None,
            'pre_tokenizer': {'type': 'ByteLevel', 'add_prefix_space': False, 'trim_offsets': True, 'use_regex': True},
            'post_processor': None,
            'decoder': {'type': 'ByteLevel', 'add_prefix_space': True, 'trim_offsets': True, 'use_regex': True},
            'model': {'type': 'BPE', 'dropout': None, 'unk_token': None, 'continuing_subword_prefix': None,
                      'end_of_word_suffix': None, 'fuse_unk': False, 'byte_fallback': False,
                      'vocab': self.vocab, 'merges': []},
        }
        config = {'add_prefix_space': False, 'bos_token': None, 'eos_token': eos, 'pad_token': eos,
                  'clean_up_tokenization_spaces': False, 'model_max_length': 512, **extra_config}
        return tokenizer_json, config


# ---------------------------------------------------------------- modules

class Attention(torch.nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.q = torch.nn.Linear(dim, dim)
        self.k = torch.nn.Linear(dim, dim)
        self.v = torch.nn.Linear(dim, dim)
        self.o = torch.nn.Linear(dim, dim)

    def forward(self, x, key_mask):
        b, s, d = x.shape
        hd = d // self.heads
        split = lambda t: t.view(b, s, self.heads, hd).transpose(1, 2)
        q, k, v = split(self.q(x)), split(self.k(x)), split(self.v(x))
        scores = q @ k.transpose(-1, -2) / math.sqrt(hd)
        scores = scores.masked_fill(~key_mask[:, None, None, :], torch.finfo(torch.float32).min)
        out = (scores.softmax(-1) @ v).transpose(1, 2).reshape(b, s, d)
        return self.o(out)


class VisionLayer(torch.nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.ln1 = torch.nn.LayerNorm(dim)
        self.attn = Attention(dim, heads)
        self.ln2 = torch.nn.LayerNorm(dim)
        self.fc1 = torch.nn.Linear(dim, dim * 2)
        self.fc2 = torch.nn.Linear(dim * 2, dim)

    def forward(self, x, key_mask):
        x = x + self.attn(self.ln1(x), key_mask)
        return x + self.fc2(torch.nn.functional.gelu(self.fc1(self.ln2(x)), approximate='tanh'))


class VisionTower(torch.nn.Module):
    """SigLIP-style: patch conv, learned positions, pre-norm layers, post norm; keeps patch order row-major."""

    def __init__(self, image_size, patch, dim, heads, layers):
        super().__init__()
        self.patch = patch
        self.patch_embed = torch.nn.Conv2d(3, dim, patch, stride=patch)
        self.positions = torch.nn.Parameter(torch.randn((image_size // patch) ** 2, dim) * 0.5)
        self.layers = torch.nn.ModuleList([VisionLayer(dim, heads) for _ in range(layers)])
        self.post_norm = torch.nn.LayerNorm(dim)

    def forward(self, pixels, pixel_mask):
        # A patch takes part when any of its pixels is real (Idefics3's patch_attention_mask).
        n = pixels.shape[0]
        patch_mask = torch.nn.functional.max_pool2d(pixel_mask.float()[:, None], self.patch).reshape(n, -1) > 0
        x = self.patch_embed(pixels).flatten(2).transpose(1, 2) + self.positions
        for layer in self.layers:
            x = layer(x, patch_mask)
        return self.post_norm(x)


def pixel_shuffle(x, scale):
    """Idefics3's connector shuffle: [n, seq, d] -> [n, seq / scale^2, d * scale^2]."""
    n, seq, d = x.shape
    side = int(seq ** 0.5)
    x = x.view(n, side, side, d)
    x = x.view(n, side, side // scale, d * scale)
    x = x.permute(0, 2, 1, 3)
    x = x.reshape(n, side // scale, side // scale, d * scale * scale)
    x = x.permute(0, 2, 1, 3)
    return x.reshape(n, seq // (scale * scale), d * scale * scale)


class IdeficsVisionEncoder(torch.nn.Module):
    def __init__(self, tower, scale, text_dim):
        super().__init__()
        self.tower = tower
        self.scale = scale
        d = tower.post_norm.normalized_shape[0]
        self.proj = torch.nn.Linear(d * scale * scale, text_dim, bias=False)

    def forward(self, pixel_values, pixel_attention_mask):
        b, n, c, h, w = pixel_values.shape
        x = self.tower(pixel_values.reshape(b * n, c, h, w), pixel_attention_mask.reshape(b * n, h, w))
        return self.proj(pixel_shuffle(x, self.scale))


class LlavaVisionEncoder(torch.nn.Module):
    """CLIP-style tower, features of every patch (CLS dropped, 'default' strategy), 2-layer MLP projector."""

    def __init__(self, tower, text_dim):
        super().__init__()
        self.tower = tower
        d = tower.post_norm.normalized_shape[0]
        self.fc1 = torch.nn.Linear(d, text_dim)
        self.fc2 = torch.nn.Linear(text_dim, text_dim)

    def forward(self, pixel_values):
        n, c, h, w = pixel_values.shape
        x = self.tower(pixel_values, torch.ones(n, h, w, dtype=torch.bool))
        return self.fc2(torch.nn.functional.gelu(self.fc1(x)))


def rms_norm(x, weight, eps=1e-5):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * weight


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat([-x[..., half:], x[..., :half]], dim=-1)


class Decoder(torch.nn.Module):
    """A llama decoder over inputs_embeds with a KV cache (Optimum's I/O names)."""

    def __init__(self, vocab, dim, heads, kv_heads, layers, hidden, logit_bias):
        super().__init__()
        self.dim, self.heads, self.kv_heads, self.n_layers = dim, heads, kv_heads, layers
        self.hd = dim // heads
        self.embed = torch.nn.Embedding(vocab, dim)
        torch.nn.init.normal_(self.embed.weight, std=1.0)
        self.layers = torch.nn.ModuleList()
        for _ in range(layers):
            layer = torch.nn.Module()
            layer.norm1 = torch.nn.Parameter(1 + 0.2 * torch.randn(dim))
            layer.q = torch.nn.Linear(dim, dim, bias=False)
            layer.k = torch.nn.Linear(dim, kv_heads * self.hd, bias=False)
            layer.v = torch.nn.Linear(dim, kv_heads * self.hd, bias=False)
            layer.o = torch.nn.Linear(dim, dim, bias=False)
            layer.norm2 = torch.nn.Parameter(1 + 0.2 * torch.randn(dim))
            layer.gate = torch.nn.Linear(dim, hidden, bias=False)
            layer.up = torch.nn.Linear(dim, hidden, bias=False)
            layer.down = torch.nn.Linear(hidden, dim, bias=False)
            self.layers.append(layer)
        self.norm = torch.nn.Parameter(1 + 0.2 * torch.randn(dim))
        with torch.no_grad():
            # Peaked attention and strong attention outputs: the context, images included,
            # steers the next token more than the current token's own embedding.
            for layer in self.layers:
                layer.q.weight.mul_(3.0)
                layer.k.weight.mul_(3.0)
                layer.v.weight.mul_(2.0)
                layer.o.weight.mul_(3.0)
        self.lm_head = torch.nn.Linear(dim, vocab, bias=False)
        torch.nn.init.normal_(self.lm_head.weight, std=2.0 / math.sqrt(dim))
        self.register_buffer('logit_bias', logit_bias)

    def forward(self, inputs_embeds, attention_mask, position_ids, *past):
        b, s, _ = inputs_embeds.shape
        past_len = past[0].shape[2]
        total = past_len + s
        inv_freq = 1.0 / (10000 ** (torch.arange(0, self.hd, 2, dtype=torch.float32) / self.hd))
        angles = position_ids.float()[..., None] * inv_freq
        emb = torch.cat([angles, angles], dim=-1)
        cos, sin = emb.cos()[:, None], emb.sin()[:, None]
        # Slot-causal mask over [past + new] plus the padding mask.
        query_slots = torch.arange(s)[:, None] + past_len
        key_slots = torch.arange(total)[None, :]
        allowed = (key_slots <= query_slots)[None, None] & (attention_mask[:, None, None, :] > 0)
        x = inputs_embeds
        presents = []
        for i, layer in enumerate(self.layers):
            h = rms_norm(x, layer.norm1)
            q = layer.q(h).view(b, s, self.heads, self.hd).transpose(1, 2)
            k = layer.k(h).view(b, s, self.kv_heads, self.hd).transpose(1, 2)
            v = layer.v(h).view(b, s, self.kv_heads, self.hd).transpose(1, 2)
            q = q * cos + rotate_half(q) * sin
            k = k * cos + rotate_half(k) * sin
            k = torch.cat([past[2 * i], k], dim=2)
            v = torch.cat([past[2 * i + 1], v], dim=2)
            presents += [k, v]
            rep = self.heads // self.kv_heads
            # expand + reshape rather than repeat_interleave, which exports with the example's batch baked in.
            kk = k[:, :, None].expand(-1, -1, rep, -1, -1).reshape(b, self.heads, -1, self.hd)
            vv = v[:, :, None].expand(-1, -1, rep, -1, -1).reshape(b, self.heads, -1, self.hd)
            scores = q @ kk.transpose(-1, -2) / math.sqrt(self.hd)
            scores = scores.masked_fill(~allowed, torch.finfo(torch.float32).min)
            attn = (scores.softmax(-1) @ vv).transpose(1, 2).reshape(b, s, self.dim)
            x = x + layer.o(attn)
            h = rms_norm(x, layer.norm2)
            x = x + layer.down(torch.nn.functional.silu(layer.gate(h)) * layer.up(h))
        logits = self.lm_head(rms_norm(x, self.norm)) + self.logit_bias
        return (logits, *presents)


class EmbedTokens(torch.nn.Module):
    def __init__(self, embed):
        super().__init__()
        self.embed = embed

    def forward(self, input_ids):
        return self.embed(input_ids)


def export(module, args, path, input_names, output_names, dynamic_axes):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    torch.onnx.export(module, args, path, input_names=input_names, output_names=output_names,
                      dynamic_axes=dynamic_axes, opset_version=14, do_constant_folding=True)


def export_text_parts(folder, decoder, tokenizer_vocab):
    export(EmbedTokens(decoder.embed), (torch.tensor([[1, 2, 3]]),), os.path.join(folder, 'onnx', 'embed_tokens.onnx'),
           ['input_ids'], ['inputs_embeds'], {'input_ids': {0: 'batch', 1: 'seq'}, 'inputs_embeds': {0: 'batch', 1: 'seq'}})
    L, kvh, hd = decoder.n_layers, decoder.kv_heads, decoder.hd
    past = []
    past_names, present_names, axes = [], [], {
        'inputs_embeds': {0: 'batch', 1: 'seq'}, 'attention_mask': {0: 'batch', 1: 'total'},
        'position_ids': {0: 'batch', 1: 'seq'}, 'logits': {0: 'batch', 1: 'seq'}}
    for i in range(L):
        for kind in ('key', 'value'):
            past.append(torch.randn(2, kvh, 2, hd))
            past_names.append(f'past_key_values.{i}.{kind}')
            present_names.append(f'present.{i}.{kind}')
            axes[past_names[-1]] = {0: 'batch', 2: 'past'}
            axes[present_names[-1]] = {0: 'batch', 2: 'total'}
    args = (torch.randn(2, 3, decoder.dim), torch.ones(2, 5, dtype=torch.int64), torch.tensor([[2, 3, 4], [2, 3, 4]]), *past)
    export(decoder, args, os.path.join(folder, 'onnx', 'decoder_model_merged.onnx'),
           ['inputs_embeds', 'attention_mask', 'position_ids', *past_names], ['logits', *present_names], axes)


def greedy(decoder, embeds, steps):
    """Greedy continuation from prompt embeddings; returns token ids and the prefill logits."""
    with torch.no_grad():
        L, kvh, hd = decoder.n_layers, decoder.kv_heads, decoder.hd
        past = [torch.zeros(1, kvh, 0, hd) for _ in range(2 * L)]
        n = embeds.shape[0]
        out = decoder(embeds[None], torch.ones(1, n, dtype=torch.int64), torch.arange(n)[None], *past)
        first_logits = out[0][0, -1]
        tokens = []
        logits, past = out[0][0, -1], list(out[1:])
        for step in range(steps):
            token = int(logits.argmax())
            tokens.append(token)
            pos = n + step
            out = decoder(decoder.embed(torch.tensor([[token]])), torch.ones(1, pos + 1, dtype=torch.int64),
                          torch.tensor([[pos]]), *past)
            logits, past = out[0][0, -1], list(out[1:])
        return tokens, first_logits


def ascii_bias(vocab):
    """Keeps greedy output to printable ASCII (and never EOS) so reference texts compare exactly."""
    bias = torch.full((vocab,), -30.0)
    bias[32:127] = 0.0
    return bias


# ---------------------------------------------------------------- images

def test_images():
    """Odd-sized images with structure (gradients, a disc, noise), written as PNG and JPEG (4:4:4)."""
    def make(w, h, seed):
        rng = np.random.default_rng(seed)
        y, x = np.mgrid[0:h, 0:w]
        r = (x * 255 / max(w - 1, 1))
        g = (y * 255 / max(h - 1, 1))
        b = 128 + 100 * np.sin(x / 5.0 + seed) * np.cos(y / 7.0)
        disc = ((x - w * 0.6) ** 2 + (y - h * 0.4) ** 2) < (min(w, h) * 0.25) ** 2
        rgb = np.stack([r, g, b], -1) + rng.normal(0, 12, (h, w, 3))
        rgb[disc] = [240, 30, 60]
        return Image.fromarray(np.clip(rgb, 0, 255).astype(np.uint8), 'RGB')

    images = {}
    images['tall.png'] = make(45, 71, 1)       # portrait: 3 x 2 tiles
    images['wide.jpg'] = make(83, 57, 2)       # landscape: 3 x 3 tiles
    images['small.png'] = make(13, 9, 3)       # smaller than a tile, still upscaled and split
    images['other.png'] = make(61, 37, 4)      # a different image for "different outputs"
    return images


def save_images(images, folder):
    os.makedirs(folder, exist_ok=True)
    for name, image in images.items():
        path = os.path.join(folder, name)
        if name.endswith('.jpg'):
            image.save(path, quality=95, subsampling=0)
        else:
            image.save(path, optimize=False)


def write_f32(path, array):
    np.asarray(array, dtype='<f4').tofile(path)


# ---------------------------------------------------------------- Idefics3 image processor (reference)

RESAMPLE = Image.LANCZOS


def idefics_resize_longest(h, w, longest, upper=4096):
    aspect = w / h
    if w >= h:
        w = longest
        h = int(w / aspect)
        if h % 2 != 0:
            h += 1
    else:
        h = longest
        w = int(h * aspect)
        if w % 2 != 0:
            w += 1
    h, w = max(h, 1), max(w, 1)
    aspect = w / h
    if w >= h and w > upper:
        w = upper
        h = int(w / aspect)
    elif h > w and h > upper:
        h = upper
        w = int(h * aspect)
    return max(h, 1), max(w, 1)


def pil_resize(image, h, w):
    return image if image.size == (w, h) else image.resize((w, h), resample=RESAMPLE)


def idefics_process(image, cfg):
    """-> (frames as float32 [n, 3, H, W], rows, cols)."""
    image = image.convert('RGB')
    tile = cfg['max_image_size']['longest_edge']
    h, w = idefics_resize_longest(image.height, image.width, cfg['size']['longest_edge'])
    image = pil_resize(image, h, w)
    if cfg['do_image_splitting']:
        h, w = image.height, image.width
        aspect = w / h
        if w >= h:
            w = math.ceil(w / tile) * tile
            h = int(w / aspect)
            h = math.ceil(h / tile) * tile
        else:
            h = math.ceil(h / tile) * tile
            w = int(h * aspect)
            w = math.ceil(w / tile) * tile
        image = pil_resize(image, h, w)
        frames = []
        if h > tile or w > tile:
            rows, cols = math.ceil(h / tile), math.ceil(w / tile)
            th, tw = math.ceil(h / rows), math.ceil(w / cols)
            array = np.array(image)
            for r in range(rows):
                for c in range(cols):
                    frames.append(array[r * th:min(r * th + th, h), c * tw:min(c * tw + tw, w)])
            frames.append(np.array(pil_resize(image, tile, tile)))
        else:
            rows = cols = 0
            frames.append(np.array(image))
    else:
        rows = cols = 0
        frames = [np.array(pil_resize(image, tile, tile))]
    mean = np.array(cfg['image_mean'], dtype=np.float32)
    std = np.array(cfg['image_std'], dtype=np.float32)
    out = []
    for f in frames:
        # transformers' rescale multiplies in float64, then casts to float32; normalize is float32.
        x = (f.astype(np.float64) * cfg['rescale_factor']).astype(np.float32)
        x = (x - mean) / std
        out.append(x.transpose(2, 0, 1))
    return np.stack(out).astype(np.float32), rows, cols


def idefics_expand(rows, cols, seq_len):
    fake, img, glob = '<fake_token_around_image>', '<image>', '<global-img>'
    if rows == 0 and cols == 0:
        return f'{fake}{glob}{img * seq_len}{fake}'
    text = ''
    for r in range(rows):
        for c in range(cols):
            text += f'{fake}<row_{r + 1}_col_{c + 1}>{img * seq_len}'
        text += '\n'
    return text + f'\n{fake}{glob}{img * seq_len}{fake}'


SMOLVLM_TEMPLATE = (
    "<|im_start|>{% for message in messages %}{{message['role'] | capitalize}}"
    "{% if message['content'][0]['type'] == 'image' %}{{':'}}{% else %}{{': '}}{% endif %}"
    "{% for line in message['content'] %}{% if line['type'] == 'text' %}{{line['text']}}"
    "{% elif line['type'] == 'image' %}{{ '<image>' }}{% endif %}{% endfor %}<end_of_utterance>\n{% endfor %}"
    "{% if add_generation_prompt %}{{ 'Assistant:' }}{% endif %}"
)


def build_smolvlm(images):
    folder = os.path.join(ROOT, 'smolvlm')
    specials = ['<|endoftext|>', '<|im_start|>', '<|im_end|>', '<fake_token_around_image>', '<image>',
                '<end_of_utterance>', '<global-img>'] + [f'<row_{r}_col_{c}>' for r in range(1, 7) for c in range(1, 7)]
    tok = Tokenizer(specials)
    vocab = tok.size
    dim, heads, kv_heads, layers, hidden = 32, 4, 2, 2, 64
    patch, tile, vis_dim, scale = 8, 32, 24, 2
    image_seq_len = (tile // patch) ** 2 // (scale * scale)
    decoder = Decoder(vocab, dim, heads, kv_heads, layers, hidden, ascii_bias(vocab)).eval()
    tower = VisionTower(tile, patch, vis_dim, 2, 2)
    vision = IdeficsVisionEncoder(tower, scale, dim).eval()
    with torch.no_grad():
        vision.proj.weight.mul_(3.0)

    preprocessor = {
        'do_convert_rgb': True, 'do_image_splitting': True, 'do_normalize': True, 'do_pad': True,
        'do_rescale': True, 'do_resize': True, 'image_mean': [0.5, 0.5, 0.5], 'image_std': [0.5, 0.5, 0.5],
        'image_processor_type': 'Idefics3ImageProcessor', 'max_image_size': {'longest_edge': tile},
        'processor_class': 'Idefics3Processor', 'resample': 1, 'rescale_factor': 1 / 255,
        'size': {'longest_edge': 3 * tile},
    }
    config = {
        'architectures': ['Idefics3ForConditionalGeneration'], 'model_type': 'idefics3',
        'image_token_id': tok.specials['<image>'], 'scale_factor': scale, 'tie_word_embeddings': False,
        'text_config': {'model_type': 'llama', 'hidden_size': dim, 'intermediate_size': hidden,
                        'num_hidden_layers': layers, 'num_attention_heads': heads, 'num_key_value_heads': kv_heads,
                        'vocab_size': vocab, 'max_position_embeddings': 512, 'rms_norm_eps': 1e-5,
                        'rope_theta': 10000.0, 'bos_token_id': tok.specials['<|im_start|>'],
                        'eos_token_id': tok.specials['<end_of_utterance>']},
        'vision_config': {'model_type': 'idefics3_vision', 'hidden_size': vis_dim, 'image_size': tile,
                          'patch_size': patch, 'num_hidden_layers': 2, 'num_attention_heads': 2},
    }
    os.makedirs(folder, exist_ok=True)
    tokenizer_json, tokenizer_config = tok.files('<end_of_utterance>', {'chat_template': SMOLVLM_TEMPLATE,
                                                                       'tokenizer_class': 'GPT2Tokenizer'})
    for name, value in [('config.json', config), ('preprocessor_config.json', preprocessor),
                        ('processor_config.json', {'image_seq_len': image_seq_len, 'processor_class': 'Idefics3Processor'}),
                        ('generation_config.json', {'eos_token_id': tok.specials['<end_of_utterance>']}),
                        ('tokenizer.json', tokenizer_json), ('tokenizer_config.json', tokenizer_config)]:
            with open(os.path.join(folder, name), 'w') as f:
                json.dump(value, f, indent=1)

    export_text_parts(folder, decoder, tok.vocab)
    export(vision, (torch.randn(1, 2, 3, tile, tile), torch.ones(1, 2, tile, tile, dtype=torch.bool)),
           os.path.join(folder, 'onnx', 'vision_encoder.onnx'), ['pixel_values', 'pixel_attention_mask'],
           ['image_features'], {'pixel_values': {0: 'batch', 1: 'images'}, 'pixel_attention_mask': {0: 'batch', 1: 'images'},
                                'image_features': {0: 'frames'}})

    reference = {'image_seq_len': image_seq_len, 'images': {}, 'generations': []}
    decoded = {name: Image.open(os.path.join(ROOT, 'images', name)) for name in images}
    for name, image in decoded.items():
        pixels, rows, cols = idefics_process(image, preprocessor)
        write_f32(os.path.join(ROOT, f'smolvlm-pixels-{name}.f32'), pixels)
        reference['images'][name] = {'rows': rows, 'cols': cols, 'shape': list(pixels.shape)}

    env = jinja2.Environment()
    template = env.from_string(SMOLVLM_TEMPLATE)
    steps = 8

    def run(question, image_names):
        content = [{'type': 'image'} for _ in image_names] + [{'type': 'text', 'text': question}]
        text = template.render(messages=[{'role': 'user', 'content': content}], add_generation_prompt=True)
        pieces = text.split('<image>')
        expanded = pieces[0]
        all_pixels = []
        for k, image_name in enumerate(image_names):
            pixels, rows, cols = idefics_process(decoded[image_name], preprocessor)
            all_pixels.append(pixels)
            expanded += idefics_expand(rows, cols, image_seq_len) + pieces[k + 1]
        ids = tok.encode(expanded)
        with torch.no_grad():
            embeds = decoder.embed(torch.tensor(ids))
            if all_pixels:
                px = torch.from_numpy(np.concatenate(all_pixels))[None]
                feats = vision(px, torch.ones(px.shape[0], px.shape[1], px.shape[3], px.shape[4], dtype=torch.bool))
                positions = [i for i, t in enumerate(ids) if t == tok.specials['<image>']]
                assert len(positions) == feats.shape[0] * feats.shape[1]
                embeds[positions] = feats.reshape(-1, dim)
        tokens, first_logits = greedy(decoder, embeds, steps)
        logprobs = torch.log_softmax(first_logits, -1)
        top = torch.topk(logprobs, 5)
        return {'question': question, 'images': image_names, 'prompt_token_ids': ids, 'max_tokens': steps,
                'token_ids': tokens, 'text': tok.decode(tokens),
                'top_logprobs': [{'token_id': int(i), 'logprob': float(v)} for v, i in zip(top.values, top.indices)]}

    reference['generations'].append(run('What is in this image?', ['tall.png']))
    reference['generations'].append(run('What is in this image?', ['other.png']))
    reference['generations'].append(run('Compare these.', ['small.png', 'tall.png']))
    reference['generations'].append(run('Tell me a story.', []))
    with open(os.path.join(ROOT, 'smolvlm-reference.json'), 'w') as f:
        json.dump(reference, f, indent=1)


# ---------------------------------------------------------------- LLaVA (reference)

def llava_process(image, cfg):
    """CLIPImageProcessor: resize shortest edge (bicubic), center crop, rescale, normalize."""
    image = image.convert('RGB')
    short = cfg['size']['shortest_edge']
    w, h = image.size
    if w <= h:
        nw, nh = short, int(short * h / w)
    else:
        nh, nw = short, int(short * w / h)
    if (nw, nh) != (w, h):
        image = image.resize((nw, nh), resample=Image.BICUBIC)
    ch, cw = cfg['crop_size']['height'], cfg['crop_size']['width']
    array = np.array(image)
    top, left = (nh - ch) // 2, (nw - cw) // 2
    array = array[top:top + ch, left:left + cw]
    x = (array.astype(np.float64) * cfg['rescale_factor']).astype(np.float32)
    x = (x - np.array(cfg['image_mean'], dtype=np.float32)) / np.array(cfg['image_std'], dtype=np.float32)
    return x.transpose(2, 0, 1)[None].astype(np.float32)


LLAVA_TEMPLATE = (
    "{% for message in messages %}{% if message['role'] == 'user' %}USER: {% else %}ASSISTANT: {% endif %}"
    "{% for item in message['content'] %}{% if item['type'] == 'text' %}{{ item['text'] }}{% elif item['type'] == 'image' %}<image>\n"
    "{% endif %}{% endfor %}{% if message['role'] == 'user' %} {% else %}{{ eos_token }}{% endif %}{% endfor %}"
    "{% if add_generation_prompt %}ASSISTANT:{% endif %}"
)


def build_llava(images):
    folder = os.path.join(ROOT, 'llava')
    tok = Tokenizer(['<s>', '</s>', '<image>', '<pad>'])
    vocab = tok.size
    dim, heads, kv_heads, layers, hidden = 32, 4, 4, 2, 64
    patch, size, vis_dim = 8, 24, 16
    n_tokens = (size // patch) ** 2
    decoder = Decoder(vocab, dim, heads, kv_heads, layers, hidden, ascii_bias(vocab)).eval()
    vision = LlavaVisionEncoder(VisionTower(size, patch, vis_dim, 2, 2), dim).eval()
    preprocessor = {
        'crop_size': {'height': size, 'width': size}, 'do_center_crop': True, 'do_convert_rgb': True,
        'do_normalize': True, 'do_rescale': True, 'do_resize': True,
        'image_mean': [0.48145466, 0.4578275, 0.40821073], 'image_std': [0.26862954, 0.26130258, 0.27577711],
        'image_processor_type': 'CLIPImageProcessor', 'processor_class': 'LlavaProcessor', 'resample': 3,
        'rescale_factor': 1 / 255, 'size': {'shortest_edge': size},
    }
    config = {
        'architectures': ['LlavaForConditionalGeneration'], 'model_type': 'llava',
        'image_token_index': tok.specials['<image>'], 'vision_feature_select_strategy': 'default',
        'text_config': {'model_type': 'llama', 'hidden_size': dim, 'intermediate_size': hidden,
                        'num_hidden_layers': layers, 'num_attention_heads': heads, 'num_key_value_heads': kv_heads,
                        'vocab_size': vocab, 'max_position_embeddings': 256, 'rms_norm_eps': 1e-5,
                        'bos_token_id': tok.specials['<s>'], 'eos_token_id': tok.specials['</s>']},
        'vision_config': {'model_type': 'clip_vision_model', 'hidden_size': vis_dim, 'image_size': size, 'patch_size': patch},
    }
    os.makedirs(folder, exist_ok=True)
    tokenizer_json, tokenizer_config = tok.files('</s>', {'chat_template': LLAVA_TEMPLATE, 'bos_token': '<s>',
                                                        'tokenizer_class': 'LlamaTokenizer'})
    processor = {'patch_size': patch, 'vision_feature_select_strategy': 'default', 'num_additional_image_tokens': 1,
                 'image_token': '<image>', 'processor_class': 'LlavaProcessor'}
    for name, value in [('config.json', config), ('preprocessor_config.json', preprocessor),
                        ('processor_config.json', processor), ('tokenizer.json', tokenizer_json),
                        ('tokenizer_config.json', tokenizer_config)]:
        with open(os.path.join(folder, name), 'w') as f:
            json.dump(value, f, indent=1)
    export_text_parts(folder, decoder, tok.vocab)
    export(vision, (torch.randn(2, 3, size, size),), os.path.join(folder, 'onnx', 'vision_encoder.onnx'),
           ['pixel_values'], ['image_features'], {'pixel_values': {0: 'images'}, 'image_features': {0: 'images'}})

    reference = {'image_tokens': n_tokens, 'images': {}, 'generations': []}
    decoded = {name: Image.open(os.path.join(ROOT, 'images', name)) for name in images}
    for name, image in decoded.items():
        pixels = llava_process(image, preprocessor)
        write_f32(os.path.join(ROOT, f'llava-pixels-{name}.f32'), pixels)
        reference['images'][name] = {'shape': list(pixels.shape)}
    template = jinja2.Environment().from_string(LLAVA_TEMPLATE)

    def run(question, image_names, steps=8):
        content = [{'type': 'image'} for _ in image_names] + [{'type': 'text', 'text': question}]
        text = template.render(messages=[{'role': 'user', 'content': content}], add_generation_prompt=True, eos_token='</s>')
        text = text.replace('<image>', '<image>' * n_tokens)
        ids = tok.encode(text)
        with torch.no_grad():
            embeds = decoder.embed(torch.tensor(ids))
            if image_names:
                px = torch.from_numpy(np.concatenate([llava_process(decoded[n], preprocessor) for n in image_names]))
                feats = vision(px)
                positions = [i for i, t in enumerate(ids) if t == tok.specials['<image>']]
                embeds[positions] = feats.reshape(-1, dim)
        tokens, _ = greedy(decoder, embeds, steps)
        return {'question': question, 'images': image_names, 'prompt_token_ids': ids, 'max_tokens': steps,
                'token_ids': tokens, 'text': tok.decode(tokens)}

    reference['generations'].append(run('Describe it.', ['other.png']))
    reference['generations'].append(run('Describe it.', ['tall.png']))
    with open(os.path.join(ROOT, 'llava-reference.json'), 'w') as f:
        json.dump(reference, f, indent=1)


if __name__ == '__main__':
    images = test_images()
    save_images(images, os.path.join(ROOT, 'images'))
    build_smolvlm(images)
    build_llava(images)
    print('fixtures written to', os.path.normpath(ROOT))
