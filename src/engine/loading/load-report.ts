/** The startup report's lines: what was loaded, how it is fed and batched, how long it took. */
import { formatBytes } from '../context-length.js';
import type { ModelLoadReport } from '../local-engine.js';

export function formatLoadReport(report: ModelLoadReport): { info: string[]; warnings: string[] } {
  const batching =
    report.batching.kind === 'batched'
      ? `across requests, ${report.batching.padding === 'end' ? 'left' : 'right'}-padded rows (self-test passed)`
      : `one request per step (${report.batching.reason})`;
  const info = [
    `Model file: ${report.file ?? '(in memory)'}, ${formatBytes(report.bytes)}, dtype ${report.dtype ?? 'unknown (named by modelFile)'}`,
    `Model: ${report.numLayers} layers, ${report.numKeyValueHeads} key/value heads of ${report.headDim}, context ${report.contextLength} tokens`,
    `Model inputs: ${report.inputNames.filter((name) => !name.startsWith('past_key_values.')).join(', ')}, past_key_values.0..${report.numLayers - 1} (${report.contract})`,
    `Batching: ${batching}`,
    ...(report.threads !== null ? [`Threads: ${report.threads}`] : []),
    ...(report.multimodal !== null ? [`Multimodal: images through the ${report.multimodal}`] : []),
    ...(report.audio ? [`Multimodal: audio through the ${report.audio}`] : []),
    ...report.notes,
    `Model loaded and warmed up in ${report.loadMs} ms`,
  ];
  return { info, warnings: report.warnings };
}
