#!/usr/bin/env python3
"""
A tiny seeded Idefics3ForConditionalGeneration (SmolVLM-256M's architecture) made with
transformers 5, exported to ONNX in the onnx-community layout, and transformers' own greedy
output for JPEG images, into test/fixtures/transformers5/idefics3-onnx/:

    /work/venvs/refs/bin/python scripts/transformers5/build_idefics3_export.py   (torch, transformers 5)

onnx/vision_encoder.onnx        pixel_values [batch, images, 3, 32, 32] -> image_features (vision
                                model + connector: get_image_features for full tiles, which
                                Idefics3's tiles always are)
onnx/embed_tokens.onnx          input_ids -> inputs_embeds
onnx/decoder_model_merged.onnx  inputs_embeds, attention_mask, position_ids, past_key_values.N.key/value
                                -> logits, present.N.key/value (the text model and lm_head)
config.json, generation_config.json  written by save_pretrained
processor and tokenizer         test/fixtures/transformers5/smolvlm (saved by transformers 5) copied
reference.json                  for each JPEG of test/fixtures/media/jpeg (Pillow-written: 4:2:0, 4:2:2,
                                progressive, EXIF-rotated, CMYK): load_image + the processor's input_ids
                                and model.generate's greedy tokens and text.
"""
import json
import os
import shutil

import torch
import transformers
from transformers import AutoProcessor, GenerationConfig, Idefics3Config, Idefics3ForConditionalGeneration
from transformers.cache_utils import DynamicCache
from transformers.image_utils import load_image

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, '..', '..')
PROCESSOR = os.path.join(ROOT, 'test', 'fixtures', 'transformers5', 'smolvlm')
SHAPES = os.path.join(ROOT, 'test', 'fixtures', 'multimodal', 'smolvlm', 'config.json')
OUT = os.path.join(ROOT, 'test', 'fixtures', 'transformers5', 'idefics3-onnx')
JPEGS = ['420.jpg', '422.jpg', 'progressive-420.jpg', 'exif-6-420.jpg', 'cmyk.jpg']
QUESTION = 'What is in the picture?'
MAX_NEW_TOKENS = 12


def build_model():
    torch.manual_seed(0)
    shapes = json.load(open(SHAPES))
    # A small vision MLP (transformers' default is 3072 wide) keeps the fixture small.
    config = Idefics3Config(vision_config={**shapes['vision_config'], 'intermediate_size': 48}, text_config=shapes['text_config'],
                            image_token_id=shapes['image_token_id'], scale_factor=shapes['scale_factor'], tie_word_embeddings=False)
    model = Idefics3ForConditionalGeneration(config).eval()
    with torch.no_grad():
        # Norm weights near 1 and larger projections, so that the image decides the output.
        for name, parameter in model.named_parameters():
            if 'norm' in name and name.endswith('weight'):
                parameter.uniform_(0.9, 1.1)
            else:
                parameter.normal_(0, 0.5)
            parameter.requires_grad_(False)
    return model


def export(model):
    text = model.config.text_config
    layers, kv_heads, head_dim = text.num_hidden_layers, text.num_key_value_heads, text.hidden_size // text.num_attention_heads

    class Vision(torch.nn.Module):
        def forward(self, pixel_values):
            # get_image_features' mask-driven filtering and position bucketing do not export
            # (ScatterND of mixed types); every Idefics3 tile is full, so all patches attend and
            # the positions are 0..patches-1. Checked equal to get_image_features below.
            vision = model.model.vision_model
            flat = pixel_values.reshape(-1, *pixel_values.shape[2:])
            patches = vision.embeddings.patch_embedding(flat).flatten(2).transpose(1, 2)
            hidden = patches + vision.embeddings.position_embedding(torch.arange(vision.embeddings.num_patches))
            hidden = vision.post_layernorm(vision.encoder(inputs_embeds=hidden).last_hidden_state)
            return model.model.connector(hidden)

    class Embed(torch.nn.Module):
        def forward(self, input_ids):
            return model.model.text_model.embed_tokens(input_ids)

    class Decoder(torch.nn.Module):
        def forward(self, inputs_embeds, attention_mask, position_ids, *past):
            cache = DynamicCache(config=text)
            for i in range(layers):
                cache.update(past[2 * i], past[2 * i + 1], i)
            out = model.model.text_model(inputs_embeds=inputs_embeds, attention_mask=attention_mask, position_ids=position_ids,
                                         past_key_values=cache, use_cache=True)
            presents = []
            for i in range(layers):
                presents += [out.past_key_values.layers[i].keys, out.past_key_values.layers[i].values]
            return (model.lm_head(out.last_hidden_state), *presents)

    pixels = torch.rand(1, 2, 3, 32, 32)
    mask = torch.ones(1, 2, 32, 32, dtype=torch.bool)
    full = model.model.get_image_features(pixel_values=pixels, pixel_attention_mask=mask)
    full = full.pooler_output if hasattr(full, 'pooler_output') else full
    assert torch.allclose(Vision()(pixels).reshape(full.shape), full, atol=1e-5), 'the exported vision path differs from get_image_features'

    onnx_dir = os.path.join(OUT, 'onnx')
    os.makedirs(onnx_dir, exist_ok=True)
    seq, past_len = 3, 2
    embeds = torch.rand(1, seq, text.hidden_size)
    attention = torch.ones(1, past_len + seq, dtype=torch.long)
    positions = torch.arange(past_len, past_len + seq)[None]
    past = [torch.rand(1, kv_heads, past_len, head_dim) for _ in range(2 * layers)]
    inputs = ['inputs_embeds', 'attention_mask', 'position_ids'] + [f'past_key_values.{i}.{k}' for i in range(layers) for k in ('key', 'value')]
    outputs = ['logits'] + [f'present.{i}.{k}' for i in range(layers) for k in ('key', 'value')]
    axes = {'inputs_embeds': {0: 'batch', 1: 'seq'}, 'attention_mask': {0: 'batch', 1: 'total'}, 'position_ids': {0: 'batch', 1: 'seq'},
            'logits': {0: 'batch', 1: 'seq'}}
    axes.update({name: {0: 'batch', 2: 'past'} for name in inputs[3:]})
    axes.update({name: {0: 'batch', 2: 'total'} for name in outputs[1:]})
    common = {'opset_version': 17, 'dynamo': False}
    torch.onnx.export(Decoder(), (embeds, attention, positions, *past), os.path.join(onnx_dir, 'decoder_model_merged.onnx'),
                      input_names=inputs, output_names=outputs, dynamic_axes=axes, **common)
    torch.onnx.export(Embed(), (torch.tensor([[1, 2, 3]]),), os.path.join(onnx_dir, 'embed_tokens.onnx'), input_names=['input_ids'],
                      output_names=['inputs_embeds'], dynamic_axes={'input_ids': {0: 'batch', 1: 'seq'}, 'inputs_embeds': {0: 'batch', 1: 'seq'}}, **common)
    torch.onnx.export(Vision(), (pixels,), os.path.join(onnx_dir, 'vision_encoder.onnx'), input_names=['pixel_values'], output_names=['image_features'],
                      dynamic_axes={'pixel_values': {0: 'batch', 1: 'images'}, 'image_features': {0: 'images'}}, **common)


def main():
    model = build_model()
    if os.path.isdir(OUT):
        shutil.rmtree(OUT)
    os.makedirs(OUT)
    export(model)
    model.config.save_pretrained(OUT)
    GenerationConfig(bos_token_id=model.config.text_config.bos_token_id, eos_token_id=model.config.text_config.eos_token_id).save_pretrained(OUT)
    for name in ['processor_config.json', 'chat_template.jinja', 'tokenizer.json', 'tokenizer_config.json']:
        shutil.copy(os.path.join(PROCESSOR, name), os.path.join(OUT, name))
    processor = AutoProcessor.from_pretrained(OUT)
    generations = []
    for name in JPEGS:
        image = load_image(os.path.join(ROOT, 'test', 'fixtures', 'media', 'jpeg', name))
        content = [{'type': 'image'}, {'type': 'text', 'text': QUESTION}]
        text = processor.apply_chat_template([{'role': 'user', 'content': content}], add_generation_prompt=True)
        inputs = processor(text=text, images=[image], return_tensors='pt')
        with torch.no_grad():
            out = model.generate(**inputs, max_new_tokens=MAX_NEW_TOKENS, do_sample=False)
        new = out[0, inputs['input_ids'].shape[1]:].tolist()
        generations.append({'image': name, 'question': QUESTION, 'prompt_token_ids': inputs['input_ids'][0].tolist(), 'token_ids': new,
                            'text': processor.tokenizer.decode(new, skip_special_tokens=True)})
    with open(os.path.join(OUT, 'reference.json'), 'w') as f:
        json.dump({'transformers': transformers.__version__, 'torch': torch.__version__, 'max_new_tokens': MAX_NEW_TOKENS,
                   'generations': generations}, f, indent=1)
        f.write('\n')


if __name__ == '__main__':
    main()
