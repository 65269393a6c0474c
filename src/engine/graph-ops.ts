/**
 * Whether a serialized ONNX graph has a node of an operator type, without parsing it: a
 * NodeProto's op_type is field 4, a length-delimited string (tag byte 0x22, then its
 * length), so the bytes 0x22, length, name occur in the graph exactly where such a node is.
 * Weights in external data are not in these bytes; inline ones could match only by chance
 * of 2 + name-length bytes.
 */
export function graphHasOp(graph: Uint8Array, opType: string): boolean {
  const name = new TextEncoder().encode(opType);
  if (name.length > 127) return false;
  const needle = Uint8Array.of(0x22, name.length, ...name);
  for (let at = graph.indexOf(0x22); at >= 0 && at + needle.length <= graph.length; at = graph.indexOf(0x22, at + 1)) {
    let match = true;
    for (let i = 1; i < needle.length && match; i++) match = graph[at + i] === needle[i];
    if (match) return true;
  }
  return false;
}
