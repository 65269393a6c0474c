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
  return hasBytes(graph, Uint8Array.of(0x22, name.length, ...name));
}

/**
 * Whether some node has an integer attribute of this name and a small value (0–127), read the
 * same way: an AttributeProto serializes its name (field 1: 0x0a, length, name) and then its
 * integer (field 3, a varint: 0x18, value), fields in number order as protobuf writers emit them.
 */
export function graphHasIntAttribute(graph: Uint8Array, attribute: string, value: number): boolean {
  const name = new TextEncoder().encode(attribute);
  if (name.length > 127 || !Number.isInteger(value) || value < 0 || value > 127) return false;
  return hasBytes(graph, Uint8Array.of(0x0a, name.length, ...name, 0x18, value));
}

function hasBytes(graph: Uint8Array, needle: Uint8Array): boolean {
  for (let at = graph.indexOf(needle[0]!); at >= 0 && at + needle.length <= graph.length; at = graph.indexOf(needle[0]!, at + 1)) {
    let match = true;
    for (let i = 1; i < needle.length && match; i++) match = graph[at + i] === needle[i];
    if (match) return true;
  }
  return false;
}

/**
 * The external data files a serialized graph refers to, in order of first use: each
 * external initializer carries a StringStringEntryProto { key: "location", value: file }
 * (field 1 "location" is the bytes 0x0a 0x08 "location", then field 2: 0x12, length,
 * file name). Read from the bytes, so a page knows which files to fetch without listing
 * a folder it cannot list.
 */
export function externalDataLocations(graph: Uint8Array): string[] {
  const key = Uint8Array.of(0x0a, 0x08, ...new TextEncoder().encode('location'), 0x12);
  const decoder = new TextDecoder();
  const locations: string[] = [];
  for (let at = graph.indexOf(0x0a); at >= 0 && at + key.length < graph.length; at = graph.indexOf(0x0a, at + 1)) {
    let match = true;
    for (let i = 1; i < key.length && match; i++) match = graph[at + i] === key[i];
    if (!match) continue;
    // The value's length, a varint.
    let length = 0;
    let shift = 0;
    let cursor = at + key.length;
    for (; cursor < graph.length; cursor++) {
      length |= (graph[cursor] & 0x7f) << shift;
      shift += 7;
      if ((graph[cursor] & 0x80) === 0) break;
    }
    cursor += 1;
    if (length <= 0 || length > 4096 || cursor + length > graph.length) continue;
    const location = decoder.decode(graph.subarray(cursor, cursor + length));
    if (!locations.includes(location)) locations.push(location);
  }
  return locations;
}
