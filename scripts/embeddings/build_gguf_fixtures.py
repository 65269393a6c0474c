#!/usr/bin/env python3
"""
GGUF embedding models as llama.cpp makes them: the seeded BERT and Qwen3 models of
scripts/embeddings/build_fixtures.py (same shapes, tokenizers and seeds as test/fixtures/embeddings/
bert-wordpiece and qwen3-decoder; the references below are this run's own), with sentence-transformers'
modules.json and 1_Pooling beside them, converted by llama.cpp's own convert_hf_to_gguf.py
(which writes `<arch>.pooling_type` from 1_Pooling), and served by llama-server --embedding
(pooling as the file says) for the reference vectors:

    nice -n 10 /work/venv/bin/python scripts/embeddings/build_gguf_fixtures.py [llama.cpp source dir]

test/fixtures/embeddings/gguf/
  bert-wordpiece-f32.gguf    architecture bert, tokenizer model "bert" (WPM), pooling_type MEAN
  qwen3-embedding-f32.gguf   architecture qwen3, tokenizer gpt2 / qwen2 pre-tokenizer, pooling_type LAST
  qwen3-embedding-q8_0.gguf  the same weights converted with --outtype q8_0
  reference.json             per file: texts, llama-server's /tokenize ids (special tokens added as
                             --embedding adds them), llama-server's /v1/embeddings vectors, and
                             sentence-transformers' encode vectors, with their cosines
"""
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, '..', 'gguf'))
import build_fixtures as bf  # noqa: E402

ROOT = os.path.join(HERE, '..', '..')
OUT = os.path.join(ROOT, 'test', 'fixtures', 'embeddings', 'gguf')
LLAMA_CPP = sys.argv[1] if len(sys.argv) > 1 else os.path.expanduser('~/.cache/edge-llm/llama-server/src')
# Port in the helper range of this session; any free port would do.
PORT = int(os.environ.get('LLAMA_SERVER_PORT', '18650'))


def convert(hf_dir, out, pre, outtype='f32'):
    """llama.cpp's converter; a tokenizer trained here is unknown to its pre-tokenizer hash table, so `pre` names it."""
    runner = (
        'import sys, runpy\n'
        f'sys.path.insert(0, {LLAMA_CPP!r})\n'
        'import conversion.base as base\n'
        f'base.TextModel.get_vocab_base_pre = lambda self, tokenizer: {pre!r}\n'
        f'sys.argv = ["convert_hf_to_gguf.py", {hf_dir!r}, "--outfile", {out!r}, "--outtype", {outtype!r}]\n'
        f'runpy.run_path({os.path.join(LLAMA_CPP, "convert_hf_to_gguf.py")!r}, run_name="__main__")\n'
    )
    subprocess.run([sys.executable, '-c', runner], check=True, cwd=LLAMA_CPP)


def llama_server_binary():
    script = os.path.join(ROOT, 'scripts', 'peer', 'build-llama-server.sh')
    return subprocess.run(['bash', script], check=True, capture_output=True, text=True).stdout.strip().splitlines()[-1]


def post(path, body):
    request = urllib.request.Request(f'http://127.0.0.1:{PORT}{path}', data=json.dumps(body).encode(), headers={'content-type': 'application/json'})
    with urllib.request.urlopen(request, timeout=60) as response:
        return json.loads(response.read())


def llama_server_vectors(gguf_path, texts):
    server = subprocess.Popen([llama_server_binary(), '-m', gguf_path, '--embedding', '--port', str(PORT), '--host', '127.0.0.1',
                               '-c', '256', '-ub', '256', '-b', '256', '--threads', '1'],
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        for _ in range(600):
            try:
                with urllib.request.urlopen(f'http://127.0.0.1:{PORT}/health', timeout=2) as r:
                    if r.status == 200:
                        break
            except Exception:
                time.sleep(0.1)
        ids = [post('/tokenize', {'content': text, 'add_special': True})['tokens'] for text in texts]
        data = post('/v1/embeddings', {'input': texts, 'encoding_format': 'float'})['data']
        return ids, [item['embedding'] for item in sorted(data, key=lambda item: item['index'])]
    finally:
        server.terminate()
        server.wait(timeout=30)


def cosine(a, b):
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    return float(a @ b / np.linalg.norm(a) / np.linalg.norm(b))


def build(work, maker, hf_name, st_name, gguf_name, pre, also_q8=None):
    os.makedirs(work)
    fake_out = os.path.join(work, 'st-out')
    bf.OUT = fake_out
    captured = {}
    bf.export_onnx = lambda *args, **kwargs: None
    bf.reference = lambda st, folder, extra=None: captured.update(st=st, folder=folder)
    maker(work)
    hf_dir = os.path.join(work, hf_name)
    st_folder = captured['folder']
    for name in ['modules.json', 'sentence_bert_config.json', 'config_sentence_transformers.json']:
        shutil.copy(os.path.join(st_folder, name), hf_dir)
    for sub in ['1_Pooling', '2_Normalize']:
        shutil.copytree(os.path.join(st_folder, sub), os.path.join(hf_dir, sub), dirs_exist_ok=True)
    st = captured['st']
    texts = [text for text in bf.TEXTS if text != '']
    st_vectors = st.encode(texts, batch_size=len(texts), convert_to_numpy=True).astype(float)
    # Whether the rebuild has the committed ONNX fixture's weights (not required: the references below are this run's).
    with open(os.path.join(ROOT, 'test', 'fixtures', 'embeddings', st_name, 'reference.json')) as f:
        committed = json.load(f)
    same = min(cosine(vector, committed['solo'][committed['texts'].index(text)]) for text, vector in zip(texts, st_vectors))
    print(st_name, 'rebuilt: lowest cosine to the committed ONNX fixture', same)
    out = os.path.join(OUT, gguf_name)
    convert(hf_dir, out, pre)
    ids, vectors = llama_server_vectors(out, texts)
    cosines = [cosine(a, b) for a, b in zip(vectors, st_vectors)]
    print(gguf_name, 'llama-server vs sentence-transformers cosines:', ['%.6f' % c for c in cosines])
    if also_q8 is not None:
        # The same weights in Q8_0 (what most published embedding GGUFs are): llama-server's vectors on that file.
        q8 = os.path.join(OUT, also_q8)
        convert(hf_dir, q8, pre, 'q8_0')
        q8_ids, q8_vectors = llama_server_vectors(q8, texts)
        assert q8_ids == ids
        extra[also_q8] = {'texts': texts, 'ids': q8_ids, 'llama_server': q8_vectors, 'sentence_transformers': st_vectors.tolist(),
                          'cosine_llama_server_vs_sentence_transformers': [cosine(a, b) for a, b in zip(q8_vectors, st_vectors)]}
    return {
        'texts': texts,
        'ids': ids,
        'st_ids': [st.tokenizer(text)['input_ids'] for text in texts],
        'llama_server': vectors,
        'sentence_transformers': st_vectors.tolist(),
        'cosine_llama_server_vs_sentence_transformers': cosines,
    }


extra = {}


def main():
    os.makedirs(OUT, exist_ok=True)
    reference = {}
    with tempfile.TemporaryDirectory() as work:
        reference['bert-wordpiece-f32.gguf'] = build(os.path.join(work, 'b'), bf.bert, 'bert-hf', 'bert-wordpiece', 'bert-wordpiece-f32.gguf', 'default')
    with tempfile.TemporaryDirectory() as work:
        reference['qwen3-embedding-f32.gguf'] = build(os.path.join(work, 'q'), bf.qwen3, 'qwen3-hf', 'qwen3-decoder', 'qwen3-embedding-f32.gguf', 'qwen2', also_q8='qwen3-embedding-q8_0.gguf')
    reference.update(extra)
    with open(os.path.join(OUT, 'reference.json'), 'w') as f:
        json.dump(reference, f, separators=(',', ':'))
        f.write('\n')


if __name__ == '__main__':
    main()
