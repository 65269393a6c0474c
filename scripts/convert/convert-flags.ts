/** The converter CLI's options (scripts/convert-llama2c.ts). */
import type { ConvertOptions } from '../../src/convert/convert-llama2c-model.js';
import { GRAPH_OPS, type GraphOps } from '../../src/graph/llama-onnx-graph.js';
import { WEIGHT_DTYPES, type Q4AccuracyLevel, type WeightDtype } from '../../src/graph/weight-dtype.js';

/** The options, or the reason they are wrong. */
export function parseConvertFlags(flags: readonly string[]): ConvertOptions | string {
  const options: ConvertOptions = { ops: 'fused', dtypes: ['fp32'] };
  for (const flag of flags) {
    const [name, value] = flag.split(/=(.*)/s, 2) as [string, string | undefined];
    if (name === '--ops' && value !== undefined && (GRAPH_OPS as readonly string[]).includes(value)) {
      options.ops = value as GraphOps;
    } else if (name === '--dtype' && value !== undefined) {
      const dtypes = value.split(',');
      const unknown = dtypes.filter((d) => !(WEIGHT_DTYPES as readonly string[]).includes(d));
      if (unknown.length > 0 || dtypes.length === 0) return `unknown dtype ${unknown.join(', ') || '(empty)'}: use ${WEIGHT_DTYPES.join(', ')}`;
      options.dtypes = [...new Set(dtypes as WeightDtype[])];
    } else if (name === '--q4-accuracy' && value !== undefined && /^[0-4]$/.test(value)) {
      options.q4AccuracyLevel = Number(value) as Q4AccuracyLevel;
    } else if (name === '--q4-embedding' && (value === 'blocks' || value === 'float')) {
      options.q4Embedding = value;
    } else if (name === '--all-logits' && value === undefined) {
      options.logitsToKeep = false;
    } else {
      return `unknown option ${flag}`;
    }
  }
  return options;
}

