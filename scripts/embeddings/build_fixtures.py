#!/usr/bin/env python3
"""
Tiny seeded embedding models, saved as sentence-transformers saves them and exported to ONNX in
the onnx-community / Optimum layout, with sentence-transformers' own `encode` output as the
reference, into test/fixtures/embeddings/:

    nice -n 10 /work/venv/bin/python scripts/embeddings/build_fixtures.py
        (torch, transformers 5, sentence-transformers, tokenizers, sentencepiece, onnx)

bert-wordpiece/  BertModel (2 layers, hidden 32) with a WordPiece vocabulary trained here
                 (BERT's uncased pipeline: BertNormalizer, BertPreTokenizer, [CLS] $A [SEP]);
                 modules.json = Transformer, Pooling (mean), Normalize. No Matryoshka
                 dimensions: `dimensions` is refused on it, as vLLM does.
xlmr-unigram/    XLMRobertaModel with a sentencepiece Unigram model trained here, converted by
                 transformers' XLMRobertaTokenizer (Precompiled normalizer, Metaspace, <s> $A
                 </s>); Pooling (CLS), Normalize; config.json carries "matryoshka_dimensions"
                 (vLLM's switch for `dimensions`).
modernbert-bpe/  ModernBertModel (3 layers: local sliding-window attention of 8 tokens, then global
                 every 3rd layer; rotary positions) with a byte-level BPE trained here, [CLS] $A
                 [SEP]; Pooling (mean), Normalize. `build_fixtures.py modernbert` builds it alone.
qwen3-decoder/   Qwen3Model (a decoder, Qwen3-Embedding's layout) with a byte-level BPE trained
                 here whose post-processor appends <|endoftext|> (as Qwen3-Embedding's does);
                 Pooling (lasttoken), Normalize; config_sentence_transformers.json carries
                 Qwen3-Embedding's prompts ("query" an instruction, "document" empty).

Each folder: config.json, tokenizer.json, tokenizer_config.json, special_tokens_map.json,
modules.json, sentence_bert_config.json, config_sentence_transformers.json, 1_Pooling/config.json,
2_Normalize/, onnx/model.onnx (inputs input_ids, attention_mask[, token_type_ids][, position_ids];
output last_hidden_state, dynamic batch and sequence axes), and reference.json:
  texts            the inputs
  ids              the tokenizer's ids for each text (special tokens added), as encode runs it
  solo             SentenceTransformer.encode(text) for each text alone
  batched          SentenceTransformer.encode(texts) in one batch (padded)
  prompts          (decoder) encode(texts, prompt_name=...) for each prompt name
  truncate_dim     (Matryoshka) encode(texts, truncate_dim=d) for each d
The safetensors weights are not kept: the server and the tests read the ONNX graph only.
"""
import json
import os
import shutil
import tempfile

import numpy as np
import torch

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..')
OUT = os.path.join(ROOT, 'test', 'fixtures', 'embeddings')

CORPUS = [
    'The quick brown fox jumps over the lazy dog.',
    'A journey of a thousand miles begins with a single step.',
    'Retrieval finds the passages that answer a question.',
    'Embeddings map sentences to vectors; similar sentences lie close together.',
    'Tom had a big dog and the dog liked to run in the park.',
    'Lily saw a cat on the roof, and the cat was happy.',
    'Edge servers run small models close to their users.',
    'Der schnelle braune Fuchs springt über den faulen Hund.',
    'Le renard brun rapide saute par-dessus le chien paresseux.',
    'Café, naïve, résumé: accents are normalized or kept.',
    'Numbers like 2026 and 3.14 are tokens too.',
    'What is the capital of France? Paris is the capital of France.',
]
TEXTS = [
    'The quick brown fox jumps over the lazy dog.',
    'What is the capital of France?',
    'Paris is the capital of France.',
    'Embeddings map sentences to vectors.',
    'Café naïve résumé, ÜBER alles!',
    'a',
    'Tom had a big dog and the dog liked to run in the park with Lily and the happy cat on the roof.',
    '',
]


def seed(n):
    torch.manual_seed(n)
    np.random.seed(n)


def random_init(model, n):
    """Seeded weights with some spread (an untrained init is near-uniform, which hides pooling mistakes)."""
    seed(n)
    with torch.no_grad():
        for name, param in model.named_parameters():
            if 'norm' in name.lower() and name.endswith('weight'):
                param.copy_(1.0 + 0.1 * torch.randn_like(param))
            elif 'norm' in name.lower():
                param.copy_(0.05 * torch.randn_like(param))
            else:
                param.copy_(0.2 * torch.randn_like(param))


def export_onnx(model, folder, input_names, with_position_ids=False):
    os.makedirs(os.path.join(folder, 'onnx'), exist_ok=True)
    path = os.path.join(folder, 'onnx', 'model.onnx')
    model.eval()
    ids = torch.tensor([[5, 6, 7, 8], [9, 10, 11, 0]], dtype=torch.long)
    mask = torch.tensor([[1, 1, 1, 1], [1, 1, 1, 0]], dtype=torch.long)
    args = {'input_ids': ids, 'attention_mask': mask}
    if 'token_type_ids' in input_names:
        args['token_type_ids'] = torch.zeros_like(ids)
    if with_position_ids:
        args['position_ids'] = torch.tensor([[0, 1, 2, 3], [0, 1, 2, 2]], dtype=torch.long)

    class Wrapper(torch.nn.Module):
        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def forward(self, *tensors):
            kwargs = dict(zip(args.keys(), tensors))
            return self.inner(**kwargs).last_hidden_state

    # The torch output first: the exporter may leave the module in training mode (dropout on).
    with torch.no_grad():
        want = model(**args).last_hidden_state.numpy()
    dynamic = {name: {0: 'batch_size', 1: 'sequence_length'} for name in args}
    dynamic['last_hidden_state'] = {0: 'batch_size', 1: 'sequence_length'}
    torch.onnx.export(Wrapper(model), tuple(args.values()), path, input_names=list(args.keys()),
                      output_names=['last_hidden_state'], dynamic_axes=dynamic, opset_version=17, dynamo=False)
    import onnx
    graph = onnx.load(path)
    onnx.checker.check_model(graph)
    # One self-contained file (the exporter may have written external data for nothing).
    for extra in os.listdir(os.path.join(folder, 'onnx')):
        if extra != 'model.onnx':
            os.remove(os.path.join(folder, 'onnx', extra))
    onnx.save(graph, path)
    # Check the export against the torch model on a padded batch before trusting it.
    import onnxruntime as ort
    session = ort.InferenceSession(path)
    feeds = {name: tensor.numpy() for name, tensor in args.items()}
    got = session.run(['last_hidden_state'], feeds)[0]
    model.eval()
    keep = mask.numpy().astype(bool)
    diff = float(np.abs(got[keep] - want[keep]).max())
    assert diff < 1e-4, f'ONNX export of {folder} differs from torch by {diff}'


def save_st(transformer_dir, folder, pooling_mode, prompts=None, include_prompt=True):
    """A SentenceTransformer (Transformer, Pooling, Normalize) saved by sentence-transformers itself."""
    from sentence_transformers import SentenceTransformer, models
    word = models.Transformer(transformer_dir)
    pooling = models.Pooling(word.get_word_embedding_dimension(), pooling_mode=pooling_mode, include_prompt=include_prompt)
    st = SentenceTransformer(modules=[word, pooling, models.Normalize()], prompts=prompts or {}, device='cpu')
    if os.path.exists(folder):
        shutil.rmtree(folder)
    st.save(folder)
    for name in os.listdir(folder):
        if name.endswith('.safetensors') or name.endswith('.bin') or name == 'README.md':
            os.remove(os.path.join(folder, name))
    return st


def reference(st, folder, extra=None):
    tok = st.tokenizer
    ref = {
        'texts': TEXTS,
        'ids': [tok(text)['input_ids'] for text in TEXTS],
        'solo': [st.encode(text, convert_to_numpy=True).astype(float).tolist() for text in TEXTS],
        'batched': st.encode(TEXTS, batch_size=len(TEXTS), convert_to_numpy=True).astype(float).tolist(),
    }
    ref.update(extra or {})
    with open(os.path.join(folder, 'reference.json'), 'w') as f:
        json.dump(ref, f, indent=None, separators=(',', ':'))
        f.write('\n')


def bert(work):
    from tokenizers import BertWordPieceTokenizer
    from transformers import BertConfig, BertModel, BertTokenizer
    trainer = BertWordPieceTokenizer(lowercase=True, strip_accents=True, clean_text=True, handle_chinese_chars=True)
    corpus = os.path.join(work, 'corpus.txt')
    with open(corpus, 'w') as f:
        f.write('\n'.join(CORPUS * 3))
    trainer.train([corpus], vocab_size=400, min_frequency=1, limit_alphabet=200)
    vocab_dir = os.path.join(work, 'bert-vocab')
    os.makedirs(vocab_dir)
    trainer.save_model(vocab_dir)
    tokenizer = BertTokenizer(vocab=os.path.join(vocab_dir, 'vocab.txt'), do_lower_case=True, model_max_length=64)
    assert len(tokenizer) > 100, 'the trained WordPiece vocabulary was not loaded'
    config = BertConfig(vocab_size=tokenizer.vocab_size, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                        intermediate_size=64, max_position_embeddings=64, type_vocab_size=2)
    config._attn_implementation = 'eager'
    model = BertModel(config, add_pooling_layer=False)
    random_init(model, 43)
    hf_dir = os.path.join(work, 'bert-hf')
    model.save_pretrained(hf_dir)
    tokenizer.save_pretrained(hf_dir)
    folder = os.path.join(OUT, 'bert-wordpiece')
    st = save_st(hf_dir, folder, 'mean')
    export_onnx(model, folder, ['input_ids', 'attention_mask', 'token_type_ids'])
    reference(st, folder)


def xlmr(work):
    import sentencepiece as spm
    from transformers import XLMRobertaConfig, XLMRobertaModel, XLMRobertaTokenizer
    corpus = os.path.join(work, 'corpus-xlmr.txt')
    with open(corpus, 'w') as f:
        f.write('\n'.join(CORPUS * 3))
    prefix = os.path.join(work, 'unigram')
    spm.SentencePieceTrainer.train(input=corpus, model_prefix=prefix, vocab_size=300, hard_vocab_limit=False, model_type='unigram',
                                   character_coverage=1.0, normalization_rule_name='nmt_nfkc',
                                   bos_id=0, pad_id=1, eos_id=2, unk_id=3)
    spm_dir = os.path.join(work, 'xlmr-spm')
    os.makedirs(spm_dir)
    shutil.copy(prefix + '.model', os.path.join(spm_dir, 'sentencepiece.bpe.model'))
    # transformers converts sentencepiece's model to tokenizer.json (Precompiled normalizer, Metaspace, Unigram).
    tokenizer = XLMRobertaTokenizer.from_pretrained(spm_dir, model_max_length=64)
    assert len(tokenizer) > 100, 'the trained Unigram model was not loaded'
    hf_dir = os.path.join(work, 'xlmr-hf')
    config = XLMRobertaConfig(vocab_size=len(tokenizer), hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                              intermediate_size=64, max_position_embeddings=66, type_vocab_size=1, pad_token_id=1)
    config._attn_implementation = 'eager'
    model = XLMRobertaModel(config, add_pooling_layer=False)
    random_init(model, 44)
    model.save_pretrained(hf_dir)
    tokenizer.save_pretrained(hf_dir)
    folder = os.path.join(OUT, 'xlmr-unigram')
    st = save_st(hf_dir, folder, 'cls')
    # vLLM's switch for `dimensions` (config.json, as hf_overrides would set it).
    with open(os.path.join(folder, 'config.json')) as f:
        cfg = json.load(f)
    cfg['matryoshka_dimensions'] = [8, 16]
    with open(os.path.join(folder, 'config.json'), 'w') as f:
        json.dump(cfg, f, indent=2)
        f.write('\n')
    export_onnx(model, folder, ['input_ids', 'attention_mask'])
    truncated = {str(d): st.encode(TEXTS, truncate_dim=d, batch_size=len(TEXTS)).astype(float).tolist() for d in (8, 16)}
    reference(st, folder, {'truncate_dim': truncated})


def modernbert(work):
    from tokenizers import Tokenizer, models, pre_tokenizers, decoders, processors, trainers
    from transformers import ModernBertConfig, ModernBertModel, PreTrainedTokenizerFast
    # ModernBERT's tokenizer: byte-level BPE (OLMo's), [CLS] $A [SEP] around every input.
    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    bpe.decoder = decoders.ByteLevel()
    specials = ['[UNK]', '[CLS]', '[SEP]', '[PAD]', '[MASK]']
    trainer = trainers.BpeTrainer(vocab_size=400, special_tokens=specials, initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    bpe.train_from_iterator(CORPUS * 3, trainer)
    cls, sep = bpe.token_to_id('[CLS]'), bpe.token_to_id('[SEP]')
    bpe.post_processor = processors.TemplateProcessing(single='[CLS] $A [SEP]', pair='[CLS] $A [SEP] $B [SEP]', special_tokens=[('[CLS]', cls), ('[SEP]', sep)])
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=bpe, unk_token='[UNK]', cls_token='[CLS]', sep_token='[SEP]', pad_token='[PAD]',
                                        mask_token='[MASK]', model_max_length=128)
    config = ModernBertConfig(vocab_size=len(tokenizer), hidden_size=32, num_hidden_layers=3, num_attention_heads=4, intermediate_size=64,
                              max_position_embeddings=128, global_attn_every_n_layers=3, local_attention=8,
                              pad_token_id=bpe.token_to_id('[PAD]'), cls_token_id=cls, sep_token_id=sep, bos_token_id=cls, eos_token_id=sep)
    config._attn_implementation = 'eager'
    model = ModernBertModel(config)
    random_init(model, 46)
    hf_dir = os.path.join(work, 'modernbert-hf')
    model.save_pretrained(hf_dir)
    tokenizer.save_pretrained(hf_dir)
    folder = os.path.join(OUT, 'modernbert-bpe')
    st = save_st(hf_dir, folder, 'mean')
    export_onnx(model, folder, ['input_ids', 'attention_mask'])
    reference(st, folder)


QWEN3_PROMPTS = {
    'query': 'Instruct: Given a web search query, retrieve relevant passages that answer the query\nQuery:',
    'document': '',
}


def qwen3(work):
    from tokenizers import Tokenizer, models, pre_tokenizers, decoders, processors, trainers
    from transformers import PreTrainedTokenizerFast, Qwen3Config, Qwen3Model
    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    bpe.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=400, special_tokens=['<|endoftext|>', '<|im_start|>', '<|im_end|>'],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    bpe.train_from_iterator(CORPUS * 3 + list(QWEN3_PROMPTS.values()), trainer)
    eos = bpe.token_to_id('<|endoftext|>')
    # Qwen3-Embedding's tokenizer appends <|endoftext|> to every input: last-token pooling reads it.
    bpe.post_processor = processors.TemplateProcessing(single='$A <|endoftext|>', pair='$A <|endoftext|> $B <|endoftext|>',
                                                       special_tokens=[('<|endoftext|>', eos)])
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=bpe, eos_token='<|endoftext|>', pad_token='<|endoftext|>',
                                        model_max_length=256, padding_side='left')
    config = Qwen3Config(vocab_size=len(tokenizer), hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                         num_key_value_heads=2, head_dim=8, intermediate_size=64, max_position_embeddings=256,
                         eos_token_id=eos, pad_token_id=eos, bos_token_id=None, tie_word_embeddings=False)
    config._attn_implementation = 'eager'
    model = Qwen3Model(config)
    random_init(model, 45)
    hf_dir = os.path.join(work, 'qwen3-hf')
    model.save_pretrained(hf_dir)
    tokenizer.save_pretrained(hf_dir)
    folder = os.path.join(OUT, 'qwen3-decoder')
    st = save_st(hf_dir, folder, 'lasttoken', prompts=QWEN3_PROMPTS)
    export_onnx(model, folder, ['input_ids', 'attention_mask'], with_position_ids=True)
    prompts = {name: st.encode(TEXTS, prompt_name=name, batch_size=len(TEXTS)).astype(float).tolist() for name in QWEN3_PROMPTS}
    prompt_ids = {name: [st.tokenizer(QWEN3_PROMPTS[name] + text)['input_ids'] for text in TEXTS] for name in QWEN3_PROMPTS}
    reference(st, folder, {'prompts': prompts, 'prompt_ids': prompt_ids})


def main():
    import sys
    os.makedirs(OUT, exist_ok=True)
    import sentence_transformers
    import transformers
    # Names on the command line build only those fixtures (the others stay as committed).
    makers = {'bert': bert, 'xlmr': xlmr, 'qwen3': qwen3, 'modernbert': modernbert}
    chosen = sys.argv[1:] or list(makers)
    with tempfile.TemporaryDirectory() as work:
        for name in chosen:
            makers[name](work)
    with open(os.path.join(OUT, 'VERSIONS'), 'w') as f:
        f.write(f'transformers {transformers.__version__}\nsentence-transformers {sentence_transformers.__version__}\ntorch {torch.__version__}\n')


if __name__ == '__main__':
    main()
