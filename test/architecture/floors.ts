/**
 * The floors of src/, top to bottom: a folder imports only folders on its own floor or below.
 * docs/architecture.md's folder table draws the same (its floor numbers count from the bottom).
 */
export const FLOORS: readonly (readonly string[])[] = [
  // The homes and the command line: they build an engine and the app, nothing imports them.
  ['runtime', 'cli'],
  ['gateway'],
  ['http'],
  // Requests, generation and embeddings.
  ['protocol', 'config', 'engine', 'embeddings'],
  // Capabilities the engine and the routes use, one folder each.
  ['adapters', 'multimodal', 'media', 'gguf', 'graph', 'convert', 'tools'],
  ['sampling', 'tokenizer', 'guided', 'reasoning'],
  // The shared ground: what every floor may use, knowing nothing above it.
  ['threads', 'onnx', 'common'],
];
