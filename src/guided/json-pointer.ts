import { GuidedDecodingError } from './errors.js';

/** Local JSON Schema references ("#", "#/$defs/name", ...) resolved within one document. */
export class UnresolvableRefError extends GuidedDecodingError {}

/** The JSON pointer a local $ref names, normalised ("#/a/b"); throws for remote refs. */
export function normaliseLocalRef(ref: string): string {
  if (ref === '#' || ref === '') return '#';
  if (!ref.startsWith('#/')) {
    throw new UnresolvableRefError(`'$ref': '${ref}' is not supported (only local references such as '#/$defs/name' are)`);
  }
  return ref;
}

/** The value at a normalised local ref inside `root`. */
export function resolveLocalRef(root: unknown, pointer: string): unknown {
  if (pointer === '#') return root;
  let node: unknown = root;
  for (const raw of pointer.slice(2).split('/')) {
    const key = decodeURIComponent(raw).replace(/~1/g, '/').replace(/~0/g, '~');
    if (node === null || typeof node !== 'object' || !Object.prototype.hasOwnProperty.call(node, key)) {
      throw new UnresolvableRefError(`'$ref': '${pointer}' does not point to anything in the schema`);
    }
    node = (node as Record<string, unknown>)[key];
  }
  return node;
}
