#!/usr/bin/env python3
"""
Writes model folders as transformers 5's save_pretrained lays them out, and transformers'
own output for them, into test/fixtures/transformers5/:

    /work/venvs/refs/bin/python scripts/transformers5/build_folders.py   (torch, transformers 5, peft)

text/     the embedded model's tokenizer (AutoTokenizer on models/stories260k) given two named
          chat templates and saved: tokenizer.json, tokenizer_config.json without a
          "chat_template", chat_template.jinja, additional_chat_templates/tool_use.jinja; the
          config written by LlamaConfig.save_pretrained (rope_parameters, no torch_dtype) and
          GenerationConfig's. The ONNX graph is the embedded one (tests copy it in): the same
          weights, as scripts/adapters/build_peft_references.py checks against the golden output.
          reference.json: apply_chat_template's ids (with and without tools) and the greedy
          text transformers' generate continues them with.
smolvlm/  the SmolVLM fixture's processor (test/fixtures/multimodal/smolvlm, loaded with
          AutoProcessor) saved by transformers 5: processor_config.json with the image
          processor nested in it (no preprocessor_config.json), chat_template.jinja.
          reference.json: the processor's input_ids for each of the fixture's reference
          generations (apply_chat_template + the processor on the images, as a user runs it).
"""
import json
import os
import shutil
import sys

import numpy as np
import torch
from PIL import Image
from transformers import AutoProcessor, AutoTokenizer, GenerationConfig

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, '..', 'adapters'))
from build_peft_references import base_model  # noqa: E402  (the embedded weights in LlamaForCausalLM)

ROOT = os.path.join(HERE, '..', '..')
OUT = os.path.join(ROOT, 'test', 'fixtures', 'transformers5')
MAX_NEW_TOKENS = 16
JPEGS = ['420.jpg', '422.jpg', 'progressive-420.jpg', 'exif-6-420.jpg', 'cmyk.jpg']

DEFAULT_TEMPLATE = (
    "{{ bos_token }}{% for message in messages %}"
    "{% if message['role'] == 'system' %}{{ message['content'] }}\n"
    "{% elif message['role'] == 'user' %}User: {{ message['content'] }}\n"
    "{% else %}Assistant: {{ message['content'] }}{{ eos_token }}\n{% endif %}"
    "{% endfor %}{% if add_generation_prompt %}Assistant:{% endif %}"
)
TOOL_TEMPLATE = (
    "{{ bos_token }}You can call{% for tool in tools %} {{ tool['function']['name'] }}{% endfor %}.\n"
    "{% for message in messages %}{{ message['role'] }}: {{ message['content'] }}\n{% endfor %}"
    "{% if add_generation_prompt %}assistant:{% endif %}"
)
TOOLS = [{'type': 'function', 'function': {'name': 'get_weather', 'description': 'The weather in a city',
                                           'parameters': {'type': 'object', 'properties': {'city': {'type': 'string'}}, 'required': ['city']}}}]
CONVERSATIONS = [
    [{'role': 'user', 'content': 'Tom had a big dog.'}],
    [{'role': 'system', 'content': 'Once upon a time'}, {'role': 'user', 'content': 'Lily saw a cat.'},
     {'role': 'assistant', 'content': 'The cat was happy.'}, {'role': 'user', 'content': 'What did Lily do?'}],
]


def greedy(model, ids):
    with torch.no_grad():
        out = model.generate(torch.tensor([ids]), attention_mask=torch.ones(1, len(ids), dtype=torch.long),
                             max_new_tokens=MAX_NEW_TOKENS, do_sample=False, eos_token_id=None, pad_token_id=0)
    return out[0, len(ids):].tolist()


def ids_of(encoded):
    return list(encoded['input_ids'] if hasattr(encoded, 'keys') else encoded)


def continuation_text(tokenizer, prompt, new):
    # As vLLM's incremental detokenizer: the completion's text in the context of its prompt
    # (decoding it alone would strip the leading space a SentencePiece decoder removes at the start).
    full = tokenizer.decode(prompt + new, skip_special_tokens=True)
    head = tokenizer.decode(prompt, skip_special_tokens=True)
    assert full.startswith(head)
    return full[len(head):]


def text_folder():
    out = os.path.join(OUT, 'text')
    tokenizer = AutoTokenizer.from_pretrained(os.path.join(ROOT, 'models', 'stories260k'))
    tokenizer.chat_template = {'default': DEFAULT_TEMPLATE, 'tool_use': TOOL_TEMPLATE}
    tokenizer.save_pretrained(out)
    model = base_model()
    model.config.save_pretrained(out)
    GenerationConfig(bos_token_id=1, eos_token_id=2).save_pretrained(out)
    # Read back from the folder, as a user loads it.
    tokenizer = AutoTokenizer.from_pretrained(out)
    cases = []
    for messages in CONVERSATIONS:
        for tools in (None, TOOLS):
            ids = ids_of(tokenizer.apply_chat_template(messages, tools=tools, add_generation_prompt=True, tokenize=True))
            new = greedy(model, ids)
            cases.append({'messages': messages, 'tools': tools, 'prompt_ids': ids,
                          'prompt_text': tokenizer.apply_chat_template(messages, tools=tools, add_generation_prompt=True, tokenize=False),
                          'completion_ids': new, 'text': continuation_text(tokenizer, ids, new)})
            print('text', tools is not None, repr(cases[-1]['text']))
    with open(os.path.join(out, 'reference.json'), 'w') as f:
        json.dump({'max_tokens': MAX_NEW_TOKENS, 'cases': cases}, f, indent=1)
        f.write('\n')


def smolvlm_folder():
    source = os.path.join(ROOT, 'test', 'fixtures', 'multimodal', 'smolvlm')
    out = os.path.join(OUT, 'smolvlm')
    processor = AutoProcessor.from_pretrained(source)
    processor.save_pretrained(out)
    processor = AutoProcessor.from_pretrained(out)
    with open(os.path.join(ROOT, 'test', 'fixtures', 'multimodal', 'smolvlm-reference.json')) as f:
        fixture = json.load(f)
    images_dir = os.path.join(ROOT, 'test', 'fixtures', 'multimodal', 'images')
    generations = []
    for generation in fixture['generations']:
        content = [{'type': 'image'} for _ in generation['images']] + [{'type': 'text', 'text': generation['question']}]
        text = processor.apply_chat_template([{'role': 'user', 'content': content}], add_generation_prompt=True)
        images = [Image.open(os.path.join(images_dir, name)).convert('RGB') for name in generation['images']]
        inputs = processor(text=text, images=images or None, return_tensors='np')
        ids = inputs['input_ids'][0].tolist()
        generations.append({'question': generation['question'], 'images': generation['images'], 'prompt_token_ids': ids,
                            'same_as_fixture': ids == generation['prompt_token_ids']})
        print('smolvlm', generation['images'], len(ids), ids == generation['prompt_token_ids'])
    # JPEGs (test/fixtures/media/jpeg, written by Pillow) through transformers' load_image and
    # the processor: pixel values and the expanded prompt's ids.
    jpegs = {}
    from transformers.image_utils import load_image
    for name in JPEGS:
        image = load_image(os.path.join(ROOT, 'test', 'fixtures', 'media', 'jpeg', name))
        content = [{'type': 'image'}, {'type': 'text', 'text': 'What is in this image?'}]
        text = processor.apply_chat_template([{'role': 'user', 'content': content}], add_generation_prompt=True)
        inputs = processor(text=text, images=[image], return_tensors='np')
        pixels = inputs['pixel_values'][0].astype(np.float32)
        pixels.tofile(os.path.join(out, f'pixels-{name}.f32'))
        jpegs[name] = {'shape': list(pixels.shape), 'prompt_token_ids': inputs['input_ids'][0].tolist()}
        print('smolvlm jpeg', name, pixels.shape, len(jpegs[name]['prompt_token_ids']))
    with open(os.path.join(out, 'reference.json'), 'w') as f:
        json.dump({'generations': generations, 'jpegs': jpegs}, f, indent=1)
        f.write('\n')


def main():
    shutil.rmtree(OUT, ignore_errors=True)
    os.makedirs(OUT)
    text_folder()
    smolvlm_folder()
    import transformers
    with open(os.path.join(OUT, 'VERSIONS'), 'w') as f:
        f.write(f'transformers {transformers.__version__}\ntorch {torch.__version__}\n')


if __name__ == '__main__':
    main()
