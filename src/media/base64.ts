/**
 * Base64 for media payloads (data: URLs, OpenAI input_audio): the WHATWG "forgiving
 * base64" rules (ASCII whitespace ignored, padding optional) and nothing looser, so a
 * truncated or corrupted payload is refused instead of decoding to garbage.
 */

const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
const VALUES = new Int16Array(128).fill(-1);
for (let i = 0; i < ALPHABET.length; i++) VALUES[ALPHABET.charCodeAt(i)] = i;

/** Base64 text without whitespace and padding; null when it cannot be valid base64. */
export function canonicalBase64(text: string): string | null {
  let body = text.replace(/[\t\n\f\r ]+/g, '');
  if (body.length % 4 === 0) body = body.replace(/={1,2}$/, '');
  if (body.length % 4 === 1) return null;
  for (let i = 0; i < body.length; i++) {
    const code = body.charCodeAt(i);
    if (code >= 128 || VALUES[code] < 0) return null;
  }
  return body;
}

/** Decoded size of canonical (unpadded) base64 text. */
export function decodedBase64Length(canonical: string): number {
  return Math.floor((canonical.length * 3) / 4);
}

export function decodeCanonicalBase64(canonical: string): Uint8Array {
  const out = new Uint8Array(decodedBase64Length(canonical));
  let bits = 0;
  let buffered = 0;
  let o = 0;
  for (let i = 0; i < canonical.length; i++) {
    buffered = ((buffered << 6) | VALUES[canonical.charCodeAt(i)]) & 0xffffff;
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out[o++] = (buffered >> bits) & 0xff;
    }
  }
  return out;
}
