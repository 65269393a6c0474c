/**
 * A decoder GGUF made for llama.cpp's `--embedding` (Qwen3-Embedding style: convert_hf_to_gguf.py
 * writes `<arch>.pooling_type` from sentence-transformers' 1_Pooling) as an embedding model's
 * files: the decoder graph the GGUF path builds (src/gguf/, the "fused" flavour, whose cache
 * inputs are fed empty) with the final norm's states as `last_hidden_state` in place of the
 * logits, the file's tokenizer (add_eos from the header, as llama.cpp tokenizes for
 * --embedding), and the pooling the header names, normalized as llama-server's
 * /v1/embeddings answers (and sentence-transformers' Normalize module).
 */
import { ggufPoolingType } from '../gguf/embedding-gguf.js';
import type { ByteSource } from '../gguf/gguf-file.js';
import { buildGgufGraph, encodeGgufGraph, openGgufModel, type GgufGraphOptions } from '../gguf/gguf-model.js';
import { withHiddenStatesOutput } from '../graph/hidden-states-output.js';
import type { EmbeddingModelFiles } from './load.js';

/** sentence-transformers' module list for a pooling the header names (what modules.json would say). */
function modulesFor(pooling: 'MEAN' | 'CLS' | 'LAST'): Pick<EmbeddingModelFiles, 'modules' | 'moduleConfigs'> {
  const mode = { MEAN: 'mean', CLS: 'cls', LAST: 'lasttoken' }[pooling];
  return {
    modules: [
      { idx: 0, name: '0', path: '', type: 'sentence_transformers.models.Transformer' },
      { idx: 1, name: '1', path: '1_Pooling', type: 'sentence_transformers.models.Pooling' },
      { idx: 2, name: '2', path: '2_Normalize', type: 'sentence_transformers.models.Normalize' },
    ],
    moduleConfigs: { '1_Pooling': { pooling_mode: mode } },
  };
}

export async function ggufEmbeddingFiles(source: ByteSource, options: { name: string; graph: GgufGraphOptions }): Promise<{ files: EmbeddingModelFiles; notes: string[] }> {
  const model = await openGgufModel(source, { embedding: true });
  const pooling = ggufPoolingType(model.file);
  if (pooling === 'RANK') throw new Error('the file is a reranking model (pooling_type RANK), not an embedding model.');
  const { graph, execution } = await buildGgufGraph(model, 'fused', options.graph);
  const onnx = encodeGgufGraph(withHiddenStatesOutput(graph, model.shape.dim), 'fused', model);
  const { architectures: _generation, ...config } = model.config;
  const files: EmbeddingModelFiles = {
    config,
    tokenizerJson: model.tokenizer.tokenizerJson,
    tokenizerConfig: model.tokenizer.tokenizerConfig,
    ...(pooling === null ? {} : modulesFor(pooling)),
    onnx,
    onnxFile: `${options.name} (graph built from the GGUF)`,
  };
  const notes = [
    `GGUF embedding model: architecture ${model.shape.architecture}, ${pooling === null ? 'no pooling_type in the header (the runner chose pooling)' : `${model.shape.architecture}.pooling_type ${pooling} from the header`}, normalized as llama-server answers`,
    ...execution,
  ];
  return { files, notes };
}
