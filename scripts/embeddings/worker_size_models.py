"""Random-weight BERT exports in the shapes of the embedding models users put in a Worker
(all-MiniLM-L6-v2, bge-small-en-v1.5, bge-base-en-v1.5), as onnx-community / Xenova ship
them: onnx/model.onnx (float32) and onnx/model_quantized.onnx (onnxruntime's dynamic int8
quantization, what Xenova's model_quantized.onnx is). Not committed (22-440 MB): made to
measure what an isolate holds (scripts/embeddings/measure-worker-memory.ts).

    /work/venv/bin/python scripts/embeddings/worker_size_models.py /tmp/embedding-sizes
"""
import json
import os
import sys

import torch
from onnxruntime.quantization import QuantType, quantize_dynamic
from transformers import BertConfig, BertModel

SHAPES = {
    # name: (hidden, layers, heads, intermediate)
    'minilm-l6': (384, 6, 12, 1536),
    'bge-small': (384, 12, 12, 1536),
    'bge-base': (768, 12, 12, 3072),
}


def export(name, out):
    hidden, layers, heads, inter = SHAPES[name]
    config = BertConfig(vocab_size=30522, hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=heads,
                        intermediate_size=inter, max_position_embeddings=512, type_vocab_size=2)
    config._attn_implementation = 'eager'
    torch.manual_seed(7)
    model = BertModel(config, add_pooling_layer=False).eval()
    folder = os.path.join(out, name)
    os.makedirs(os.path.join(folder, 'onnx'), exist_ok=True)
    ids = torch.tensor([[101, 2000, 2001, 102], [101, 2002, 102, 0]])
    args = (ids, torch.ones_like(ids), torch.zeros_like(ids))
    names = ['input_ids', 'attention_mask', 'token_type_ids']
    dynamic = {n: {0: 'batch_size', 1: 'sequence_length'} for n in names + ['last_hidden_state']}

    class Wrapper(torch.nn.Module):
        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def forward(self, a, b, c):
            return self.inner(input_ids=a, attention_mask=b, token_type_ids=c).last_hidden_state

    path = os.path.join(folder, 'onnx', 'model.onnx')
    torch.onnx.export(Wrapper(model), args, path, input_names=names, output_names=['last_hidden_state'],
                      dynamic_axes=dynamic, opset_version=17, dynamo=False)
    quantize_dynamic(path, os.path.join(folder, 'onnx', 'model_quantized.onnx'), weight_type=QuantType.QInt8)
    with open(os.path.join(folder, 'config.json'), 'w') as f:
        json.dump({**config.to_dict(), 'architectures': ['BertModel']}, f)
    print(name, sum(p.numel() for p in model.parameters()), 'weights')


if __name__ == '__main__':
    out = sys.argv[1]
    for shape in sys.argv[2:] or SHAPES:
        export(shape, out)
