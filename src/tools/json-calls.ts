import { entryValue, type PartialJson } from './partial-json.js';
import type { ToolCallSnapshot } from './types.js';

/**
 * A call written as a JSON object {"name": ..., "<arguments key>": {...}}, as far as it
 * goes: null until the name is complete. The arguments are the raw text of their value
 * (a prefix while it streams); arguments sent as a JSON-encoded string are decoded
 * once complete; a complete object without arguments has "{}".
 */
export function callFromObject(text: string, node: PartialJson, argumentKeys: readonly string[]): ToolCallSnapshot | null {
  const name = entryValue(node, 'name');
  if (name === undefined || name.kind !== 'string' || !name.complete) return null;
  const key = argumentKeys.find((candidate) => entryValue(node, candidate) !== undefined);
  const value = key === undefined ? undefined : entryValue(node, key);
  if (value === undefined) return { name: name.value, arguments: node.complete ? '{}' : '' };
  if (value.kind === 'string') return { name: name.value, arguments: value.complete ? value.value : '' };
  return { name: name.value, arguments: text.slice(value.start, value.end) };
}
