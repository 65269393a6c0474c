#!/usr/bin/python3
"""
Builds the tiny audio-language fixtures of test/fixtures/multimodal/qwen2-audio/ and
test/fixtures/multimodal/ultravox/ and their reference outputs. Run with Debian's /usr/bin/python3 (torch, torchaudio, onnx, numpy,
jinja2) with the mpg123 and lame command-line tools installed:

    apt-get install python3-torchaudio mpg123 lame
    /usr/bin/python3 scripts/multimodal/build_audio_fixtures.py

The folder is in the layout onnx-community exports audio-language models:
onnx/audio_encoder.onnx (input_features [b, mel, frames] and feature_attention_mask
[b, frames] -> audio_features, projector included), onnx/embed_tokens.onnx and
onnx/decoder_model_merged.onnx taking inputs_embeds; Qwen2-Audio's special tokens, chat
template and processor rule; a Whisper feature extractor in preprocessor_config.json
(64 mel bins and a 4 s window instead of 128 and 30 s, to keep the files small).
ultravox/ has the layout of onnx-community's Ultravox exports as transformers.js runs
them: onnx/audio_encoder.onnx takes audio_values [b, mel, frames] of the audio as long
as it is (no padding, no mask) and gives exactly the processor's token count; a Llama 3
style template that prints content as text, audio as "<|audio|>".

The reference is computed here, independently of the TypeScript code:
- decoding: WAV by Python's wave module, MP3 by the mpg123 command-line tool;
- resampling to 16 kHz: torchaudio.functional.resample (windowed sinc, Hann window,
  6 zero crossings, rolloff 0.99), the rule the server documents;
- log-mel: torch.stft plus a numpy Slaney mel filter bank, as transformers'
  WhisperFeatureExtractor computes (pad to n_samples, reflect-centred STFT, power,
  mel, log10 clamped to max - 8, (x + 4) / 4, last frame dropped);
- the prompt's expansion by Qwen2AudioProcessor's rule, and greedy generation with the
  torch modules (not the ONNX files).
"""
import io
import json
import math
import os
import subprocess
import sys
import wave

import jinja2
import numpy as np
import torch
import torchaudio

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from build_fixtures import Decoder, Tokenizer, VisionLayer, ascii_bias, export, export_text_parts, greedy, write_f32  # noqa: E402

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'test', 'fixtures', 'multimodal')
AUDIO_DIR = os.path.join(ROOT, 'audio')

SAMPLING_RATE = 16000
N_FFT = 400
HOP = 160
MEL_BINS = 64
CHUNK_SECONDS = 4
N_SAMPLES = CHUNK_SECONDS * SAMPLING_RATE
MAX_FRAMES = N_SAMPLES // HOP
MP3_RATE = 44100  # lame is told to keep it


# ---------------------------------------------------------------- test audio

def tone(seconds_samples, rate, seed, base):
    """A few partials with a tremolo and noise: structure across the mel bands."""
    rng = np.random.default_rng(seed)
    t = np.arange(seconds_samples) / rate
    x = 0.3 * np.sin(2 * np.pi * base * t) * (0.6 + 0.4 * np.sin(2 * np.pi * 3 * t))
    x += 0.15 * np.sin(2 * np.pi * base * 2.7 * t + seed)
    x += 0.1 * np.sin(2 * np.pi * (base * 5.3 + 400 * t) * t)  # a chirp
    x += 0.03 * rng.standard_normal(seconds_samples)
    return np.clip(x, -0.99, 0.99)


def write_wav16(path, samples, rate):
    pcm = np.round(samples * 32767).astype('<i2')
    with wave.open(path, 'wb') as f:
        f.setnchannels(1)
        f.setsampwidth(2)
        f.setframerate(rate)
        f.writeframes(pcm.tobytes())


def read_wav16(path):
    with wave.open(path, 'rb') as f:
        assert f.getnchannels() == 1 and f.getsampwidth() == 2
        rate = f.getframerate()
        data = np.frombuffer(f.readframes(f.getnframes()), dtype='<i2')
    return data.astype(np.float32) / 32768.0, rate


def make_audio():
    os.makedirs(AUDIO_DIR, exist_ok=True)
    # Odd lengths, three rates: 22.05 kHz WAV, 44.1 kHz MP3, 16 kHz WAV.
    write_wav16(os.path.join(AUDIO_DIR, 'tone-22k.wav'), tone(30_239, 22050, 1, 330.0), 22050)
    write_wav16(os.path.join(AUDIO_DIR, 'other-16k.wav'), tone(37_777, 16000, 2, 190.0), 16000)
    raw = os.path.join(AUDIO_DIR, 'chirp-44k-source.wav')
    write_wav16(raw, tone(84_001, 44100, 3, 520.0), 44100)
    subprocess.run(['lame', '--quiet', '-m', 'm', '-b', '64', '--resample', '44.1', '--noreplaygain', raw, os.path.join(AUDIO_DIR, 'chirp-44k.mp3')], check=True)
    os.remove(raw)


def decode(name):
    path = os.path.join(AUDIO_DIR, name)
    if name.endswith('.wav'):
        return read_wav16(path)
    # mpg123 writes raw 16-bit little-endian PCM at the file's rate: the same library as the
    # server's WASM decoder, but the float decode below is compared within a tolerance.
    out = subprocess.run(['mpg123', '-q', '-m', '-e', 'f32', '-s', path], check=True, capture_output=True).stdout
    return np.frombuffer(out, dtype='<f4').copy(), MP3_RATE


def to_model_rate(samples, rate):
    if rate == SAMPLING_RATE:
        return samples.astype(np.float32)
    x = torch.from_numpy(samples.astype(np.float32))[None]
    y = torchaudio.functional.resample(x, rate, SAMPLING_RATE, lowpass_filter_width=6, rolloff=0.99,
                                       resampling_method='sinc_interpolation')
    return y[0].numpy()


# ---------------------------------------------------------------- Whisper log-mel (reference)

def hz_to_mel(f):
    f = np.asarray(f, dtype=np.float64)
    mel = 3.0 * f / 200.0
    log = f >= 1000.0
    mel = np.where(log, 15.0 + np.log(np.maximum(f, 1e-12) / 1000.0) * (27.0 / np.log(6.4)), mel)
    return mel


def mel_to_hz(m):
    m = np.asarray(m, dtype=np.float64)
    f = 200.0 * m / 3.0
    return np.where(m >= 15.0, 1000.0 * np.exp((np.log(6.4) / 27.0) * (m - 15.0)), f)


def slaney_filters(n_bins, n_mels, sr, fmax=8000.0):
    """[bins, mels], as transformers' mel_filter_bank(norm='slaney', mel_scale='slaney')."""
    fft_freqs = np.linspace(0, sr // 2, n_bins)
    mel_points = np.linspace(hz_to_mel(0.0), hz_to_mel(fmax), n_mels + 2)
    filter_freqs = mel_to_hz(mel_points)
    diff = np.diff(filter_freqs)
    slopes = filter_freqs[None, :] - fft_freqs[:, None]
    down = -slopes[:, :-2] / diff[:-1]
    up = slopes[:, 2:] / diff[1:]
    bank = np.maximum(0.0, np.minimum(down, up))
    bank *= (2.0 / (filter_freqs[2:n_mels + 2] - filter_freqs[:n_mels]))[None, :]
    return bank


FILTERS = slaney_filters(1 + N_FFT // 2, MEL_BINS, SAMPLING_RATE)


def log_mel(samples, pad_to=N_SAMPLES):
    """-> (features [mel, frames] float32, valid frames as the feature attention mask counts them)."""
    x = samples[:pad_to]
    valid = math.ceil(len(x) / HOP)
    if pad_to is not None and len(x) < pad_to:
        x = np.concatenate([x, np.zeros(pad_to - len(x), dtype=np.float32)])
    wav = torch.from_numpy(x.astype(np.float64))
    stft = torch.stft(wav, N_FFT, HOP, window=torch.hann_window(N_FFT, dtype=torch.float64), center=True,
                      pad_mode='reflect', return_complex=True)
    power = stft[..., :-1].abs() ** 2
    mel = torch.from_numpy(FILTERS.T) @ power
    log = torch.clamp(mel, min=1e-10).log10()
    log = torch.maximum(log, log.max() - 8.0)
    return ((log + 4.0) / 4.0).numpy().astype(np.float32), valid


def qwen2_audio_tokens(valid_frames):
    input_length = (valid_frames - 1) // 2 + 1
    return (input_length - 2) // 2 + 1


# ---------------------------------------------------------------- model

class AudioEncoder(torch.nn.Module):
    """Qwen2-Audio style: two convs (the second strided), positions, masked pre-norm layers, avg pool 2, norm, projector."""

    def __init__(self, mel, dim, heads, layers, text_dim, max_frames):
        super().__init__()
        self.conv1 = torch.nn.Conv1d(mel, dim, 3, padding=1)
        self.conv2 = torch.nn.Conv1d(dim, dim, 3, stride=2, padding=1)
        self.positions = torch.nn.Parameter(torch.randn(max_frames // 2, dim) * 0.5)
        self.layers = torch.nn.ModuleList([VisionLayer(dim, heads) for _ in range(layers)])
        self.pool = torch.nn.AvgPool1d(2, stride=2)
        self.norm = torch.nn.LayerNorm(dim)
        self.proj = torch.nn.Linear(dim, text_dim)
        with torch.no_grad():
            self.conv1.weight.mul_(2.0)
            self.proj.weight.mul_(3.0)

    def forward(self, input_features, feature_attention_mask):
        x = torch.nn.functional.gelu(self.conv1(input_features))
        x = torch.nn.functional.gelu(self.conv2(x)).transpose(1, 2) + self.positions
        lengths = feature_attention_mask.sum(-1)
        conv_lengths = torch.div(lengths - 1, 2, rounding_mode='floor') + 1
        key_mask = torch.arange(x.shape[1])[None, :] < conv_lengths[:, None]
        for layer in self.layers:
            x = layer(x, key_mask)
        x = self.pool(x.transpose(1, 2)).transpose(1, 2)
        return self.proj(self.norm(x))


QWEN2_AUDIO_TEMPLATE = (
    "{% set audio_count = namespace(value=0) %}"
    "{% for message in messages %}"
    "{% if loop.first and message['role'] != 'system' %}"
    "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n"
    "{% endif %}"
    "<|im_start|>{{ message['role'] }}\n"
    "{% if message['content'] is string %}"
    "{{ message['content'] }}<|im_end|>\n"
    "{% else %}"
    "{% for content in message['content'] %}"
    "{% if 'audio' in content or 'audio_url' in content %}"
    "{% set audio_count.value = audio_count.value + 1 %}"
    "Audio {{ audio_count.value }}: <|audio_bos|><|AUDIO|><|audio_eos|>\n"
    "{% elif 'text' in content %}"
    "{{ content['text'] }}"
    "{% endif %}"
    "{% endfor %}"
    "<|im_end|>\n"
    "{% endif %}"
    "{% endfor %}"
    "{% if add_generation_prompt %}"
    "<|im_start|>assistant\n"
    "{% endif %}"
)

AUDIO, BOS, EOS = '<|AUDIO|>', '<|audio_bos|>', '<|audio_eos|>'


def qwen2_audio_expand(text, token_counts):
    """Qwen2AudioProcessor: each <|AUDIO|> -> <|AUDIO|> x n, wrapped in bos/eos unless already next to them."""
    counts = list(token_counts)
    out, rest = '', text
    while AUDIO in rest:
        at = rest.find(AUDIO)
        expanded = AUDIO * counts.pop(0)
        has_bos = (out + rest[:at]).endswith(BOS)
        has_eos = rest[at + len(AUDIO):].startswith(EOS)
        if not has_bos and not has_eos:
            expanded = BOS + expanded + EOS
        out += rest[:at] + expanded
        rest = rest[at + len(AUDIO):]
    assert not counts
    return out + rest


def build_qwen2_audio(audio_names):
    torch.manual_seed(20261202)
    folder = os.path.join(ROOT, 'qwen2-audio')
    tok = Tokenizer(['<|endoftext|>', '<|im_start|>', '<|im_end|>', AUDIO, BOS, EOS])
    vocab = tok.size
    dim, heads, kv_heads, layers, hidden = 32, 4, 2, 2, 64
    audio_dim = 24
    decoder = Decoder(vocab, dim, heads, kv_heads, layers, hidden, ascii_bias(vocab)).eval()
    encoder = AudioEncoder(MEL_BINS, audio_dim, 2, 2, dim, MAX_FRAMES).eval()

    preprocessor = {
        'chunk_length': CHUNK_SECONDS, 'dither': 0.0, 'feature_extractor_type': 'WhisperFeatureExtractor',
        'feature_size': MEL_BINS, 'hop_length': HOP, 'n_fft': N_FFT, 'n_samples': N_SAMPLES,
        'nb_max_frames': MAX_FRAMES, 'padding_side': 'right', 'padding_value': 0.0,
        'processor_class': 'Qwen2AudioProcessor', 'return_attention_mask': True, 'sampling_rate': SAMPLING_RATE,
    }
    config = {
        'architectures': ['Qwen2AudioForConditionalGeneration'], 'model_type': 'qwen2_audio',
        'audio_token_index': tok.specials[AUDIO],
        'audio_config': {'model_type': 'qwen2_audio_encoder', 'num_mel_bins': MEL_BINS, 'd_model': audio_dim,
                         'encoder_layers': 2, 'encoder_attention_heads': 2, 'max_source_positions': MAX_FRAMES // 2},
        'text_config': {'model_type': 'qwen2', 'hidden_size': dim, 'intermediate_size': hidden,
                        'num_hidden_layers': layers, 'num_attention_heads': heads, 'num_key_value_heads': kv_heads,
                        'vocab_size': vocab, 'max_position_embeddings': 512, 'rms_norm_eps': 1e-5,
                        'rope_theta': 10000.0, 'eos_token_id': tok.specials['<|im_end|>']},
    }
    os.makedirs(folder, exist_ok=True)
    tokenizer_json, tokenizer_config = tok.files('<|im_end|>', {'chat_template': QWEN2_AUDIO_TEMPLATE,
                                                               'tokenizer_class': 'Qwen2Tokenizer'})
    for name, value in [('config.json', config), ('preprocessor_config.json', preprocessor),
                        ('generation_config.json', {'eos_token_id': tok.specials['<|im_end|>']}),
                        ('tokenizer.json', tokenizer_json), ('tokenizer_config.json', tokenizer_config)]:
        with open(os.path.join(folder, name), 'w') as f:
            json.dump(value, f, indent=1)
    export_text_parts(folder, decoder, tok.vocab)
    export(encoder, (torch.randn(2, MEL_BINS, MAX_FRAMES), torch.ones(2, MAX_FRAMES, dtype=torch.int64)),
           os.path.join(folder, 'onnx', 'audio_encoder.onnx'), ['input_features', 'feature_attention_mask'],
           ['audio_features'], {'input_features': {0: 'batch'}, 'feature_attention_mask': {0: 'batch'},
                                'audio_features': {0: 'batch'}})

    reference = {'sampling_rate': SAMPLING_RATE, 'audio': {}, 'generations': []}
    features = {}
    for name in audio_names:
        samples, rate = decode(name)
        resampled = to_model_rate(samples, rate)
        mel, valid = log_mel(resampled)
        features[name] = (mel, valid)
        write_f32(os.path.join(ROOT, f'qwen2-audio-features-{name}.f32'), mel)
        reference['audio'][name] = {'source_rate': rate, 'source_samples': len(samples), 'samples': len(resampled),
                                    'shape': list(mel.shape), 'valid_frames': valid,
                                    'audio_tokens': qwen2_audio_tokens(valid)}

    template = jinja2.Environment().from_string(QWEN2_AUDIO_TEMPLATE)
    steps = 8

    def generate(text, names):
        expanded = qwen2_audio_expand(text, [qwen2_audio_tokens(features[n][1]) for n in names])
        ids = tok.encode(expanded)
        with torch.no_grad():
            embeds = decoder.embed(torch.tensor(ids))
            positions = [i for i, t in enumerate(ids) if t == tok.specials[AUDIO]]
            rows = []
            for n in names:
                mel, valid = features[n]
                mask = torch.zeros(1, MAX_FRAMES, dtype=torch.int64)
                mask[0, :valid] = 1
                out = encoder(torch.from_numpy(mel)[None], mask)[0]
                rows.append(out[:qwen2_audio_tokens(valid)])  # Qwen2-Audio keeps the first n per audio
            if rows:
                feats = torch.cat(rows)
                assert len(positions) == feats.shape[0]
                embeds[positions] = feats
        tokens, first_logits = greedy(decoder, embeds, steps)
        top = torch.topk(torch.log_softmax(first_logits, -1), 5)
        return {'audio': names, 'prompt_text': text, 'prompt_token_ids': ids, 'max_tokens': steps,
                'token_ids': tokens, 'text': tok.decode(tokens),
                'top_logprobs': [{'token_id': int(i), 'logprob': float(v)} for v, i in zip(top.values, top.indices)]}

    def chat(question, names):
        content = [{'type': 'audio', 'audio_url': n} for n in names] + [{'type': 'text', 'text': question}]
        text = template.render(messages=[{'role': 'user', 'content': content}], add_generation_prompt=True)
        return {'kind': 'chat', 'question': question, **generate(text, names)}

    reference['generations'].append(chat('What is this sound?', ['tone-22k.wav']))
    reference['generations'].append(chat('What is this sound?', ['chirp-44k.mp3']))
    reference['generations'].append(chat('What is this sound?', ['other-16k.wav']))
    reference['generations'].append(chat('Compare them.', ['other-16k.wav', 'tone-22k.wav']))
    reference['generations'].append(chat('Tell me a story.', []))
    # /generate: text parts and an audio part; the bare <|AUDIO|> gets bos/eos by the rule.
    prompt = '<|im_start|>user\n' + AUDIO + 'Describe it.<|im_end|>\n<|im_start|>assistant\n'
    reference['generations'].append({'kind': 'generate', **generate(prompt, ['tone-22k.wav'])})
    with open(os.path.join(ROOT, 'qwen2-audio-reference.json'), 'w') as f:
        json.dump(reference, f, indent=1)



class UltravoxEncoder(torch.nn.Module):
    """Whisper-style convs and layers over the unpadded frames, frames stacked by 8, a projector, and one learned
    end row: 1 + ceil(ceil(frames / 2) / 8) rows, the count transformers.js's UltravoxProcessor expands to."""

    def __init__(self, mel, dim, heads, layers, text_dim, stack):
        super().__init__()
        self.stack = stack
        self.conv1 = torch.nn.Conv1d(mel, dim, 3, padding=1)
        self.conv2 = torch.nn.Conv1d(dim, dim, 3, stride=2, padding=1)
        self.positions = torch.nn.Parameter(torch.randn(MAX_FRAMES // 2, dim) * 0.5)
        self.layers = torch.nn.ModuleList([VisionLayer(dim, heads) for _ in range(layers)])
        self.proj = torch.nn.Linear(dim * stack, text_dim)
        self.end = torch.nn.Parameter(torch.randn(1, 1, text_dim))
        with torch.no_grad():
            self.conv1.weight.mul_(2.0)
            self.proj.weight.mul_(3.0)

    def forward(self, audio_values):
        x = torch.nn.functional.gelu(self.conv1(audio_values))
        x = torch.nn.functional.gelu(self.conv2(x)).transpose(1, 2)
        b, t, d = x.shape
        x = x + self.positions[:t]
        mask = torch.ones(b, t, dtype=torch.bool)
        for layer in self.layers:
            x = layer(x, mask)
        rows = torch.div(t + self.stack - 1, self.stack, rounding_mode='floor')
        x = torch.cat([x, torch.zeros(b, self.stack - 1, d)], 1)[:, :rows * self.stack]
        x = self.proj(x.reshape(b, rows, d * self.stack))
        return torch.cat([x, self.end.expand(b, 1, -1)], 1)


ULTRAVOX_TEMPLATE = (
    "{{ bos_token }}{% for message in messages %}"
    "<|start_header_id|>{{ message['role'] }}<|end_header_id|>\n\n{{ message['content'] | trim }}<|eot_id|>"
    "{% endfor %}{% if add_generation_prompt %}<|start_header_id|>assistant<|end_header_id|>\n\n{% endif %}"
)


def ultravox_tokens(samples, ds=320, stack=8):
    return 1 + math.ceil(round(samples / ds + 1e-4) / stack)


def build_ultravox(audio_names):
    torch.manual_seed(20261203)
    folder = os.path.join(ROOT, 'ultravox')
    placeholder = '<|audio|>'
    tok = Tokenizer(['<|begin_of_text|>', '<|eot_id|>', '<|start_header_id|>', '<|end_header_id|>', placeholder])
    vocab = tok.size
    dim, heads, kv_heads, layers, hidden = 32, 4, 2, 2, 64
    stack = 8
    decoder = Decoder(vocab, dim, heads, kv_heads, layers, hidden, ascii_bias(vocab)).eval()
    encoder = UltravoxEncoder(MEL_BINS, 16, 2, 2, dim, stack).eval()
    preprocessor = {
        'chunk_length': CHUNK_SECONDS, 'feature_extractor_type': 'WhisperFeatureExtractor', 'feature_size': MEL_BINS,
        'hop_length': HOP, 'n_fft': N_FFT, 'n_samples': N_SAMPLES, 'nb_max_frames': MAX_FRAMES, 'padding_side': 'right',
        'padding_value': 0.0, 'processor_class': 'UltravoxProcessor', 'return_attention_mask': False, 'sampling_rate': SAMPLING_RATE,
    }
    processor = {'audio_placeholder': placeholder, 'encoder_ds_factor': 2 * HOP, 'stack_factor': stack, 'processor_class': 'UltravoxProcessor'}
    config = {
        'architectures': ['UltravoxModel'], 'model_type': 'ultravox', 'audio_token_index': tok.specials[placeholder],
        'stack_factor': stack,
        'audio_config': {'model_type': 'whisper', 'num_mel_bins': MEL_BINS, 'd_model': 16},
        'text_config': {'model_type': 'llama', 'hidden_size': dim, 'intermediate_size': hidden,
                        'num_hidden_layers': layers, 'num_attention_heads': heads, 'num_key_value_heads': kv_heads,
                        'vocab_size': vocab, 'max_position_embeddings': 512, 'rms_norm_eps': 1e-5,
                        'rope_theta': 10000.0, 'bos_token_id': tok.specials['<|begin_of_text|>'],
                        'eos_token_id': tok.specials['<|eot_id|>']},
    }
    os.makedirs(folder, exist_ok=True)
    tokenizer_json, tokenizer_config = tok.files('<|eot_id|>', {'chat_template': ULTRAVOX_TEMPLATE, 'bos_token': '<|begin_of_text|>',
                                                               'tokenizer_class': 'PreTrainedTokenizerFast'})
    for name, value in [('config.json', config), ('preprocessor_config.json', preprocessor), ('processor_config.json', processor),
                        ('generation_config.json', {'eos_token_id': tok.specials['<|eot_id|>']}),
                        ('tokenizer.json', tokenizer_json), ('tokenizer_config.json', tokenizer_config)]:
        with open(os.path.join(folder, name), 'w') as f:
            json.dump(value, f, indent=1)
    export_text_parts(folder, decoder, tok.vocab)
    export(encoder, (torch.randn(1, MEL_BINS, 190),), os.path.join(folder, 'onnx', 'audio_encoder.onnx'), ['audio_values'],
           ['audio_features'], {'audio_values': {0: 'batch', 2: 'frames'}, 'audio_features': {0: 'batch', 1: 'rows'}})

    features = {}
    for name in audio_names:
        samples, rate = decode(name)
        resampled = to_model_rate(samples, rate)
        mel, _ = log_mel(resampled, pad_to=None)
        features[name] = (mel, len(resampled))
    template = jinja2.Environment().from_string(ULTRAVOX_TEMPLATE)
    reference = {'audio': {n: {'samples': features[n][1], 'frames': features[n][0].shape[1], 'audio_tokens': ultravox_tokens(features[n][1])}
                           for n in audio_names}, 'generations': []}

    def generate(text, names):
        counts = [ultravox_tokens(features[n][1]) for n in names]
        pieces = text.split(placeholder)
        assert len(pieces) == len(names) + 1
        expanded = pieces[0] + ''.join(placeholder * c + p for c, p in zip(counts, pieces[1:]))
        ids = tok.encode(expanded)
        with torch.no_grad():
            embeds = decoder.embed(torch.tensor(ids))
            if names:
                rows = [encoder(torch.from_numpy(features[n][0])[None])[0] for n in names]
                for r, c in zip(rows, counts):
                    assert r.shape[0] == c, (r.shape, c)
                positions = [i for i, t in enumerate(ids) if t == tok.specials[placeholder]]
                embeds[positions] = torch.cat(rows)
        tokens, _ = greedy(decoder, embeds, 8)
        return {'audio': names, 'prompt_text': text, 'prompt_token_ids': ids, 'max_tokens': 8, 'token_ids': tokens, 'text': tok.decode(tokens)}

    def chat(question, names):
        # vLLM's "string" content format: a placeholder line per audio part, then the text.
        content = '\n'.join([placeholder] * len(names) + [question])
        text = template.render(messages=[{'role': 'user', 'content': content}], add_generation_prompt=True, bos_token='<|begin_of_text|>')
        return {'kind': 'chat', 'question': question, **generate(text, names)}

    reference['generations'].append(chat('What is this sound?', ['tone-22k.wav']))
    reference['generations'].append(chat('What is this sound?', ['chirp-44k.mp3']))
    reference['generations'].append(chat('Tell me a story.', []))
    prompt = '<|start_header_id|>user<|end_header_id|>\n\n' + placeholder + 'Describe it.<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n'
    reference['generations'].append({'kind': 'generate', **generate(prompt, ['other-16k.wav'])})
    with open(os.path.join(ROOT, 'ultravox-reference.json'), 'w') as f:
        json.dump(reference, f, indent=1)

if __name__ == '__main__':
    make_audio()
    build_qwen2_audio(['tone-22k.wav', 'chirp-44k.mp3', 'other-16k.wav'])
    build_ultravox(['tone-22k.wav', 'chirp-44k.mp3', 'other-16k.wav'])
    print('audio fixtures written to', os.path.normpath(ROOT))
