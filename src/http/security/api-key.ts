/**
 * API key checks that take the same time whatever the guess: both sides are hashed with
 * SHA-256 (Web Crypto, present under Node, in workerd and in browsers) and the digests
 * compared with a loop that never exits early, against every configured key. Neither how
 * many leading characters were right, nor the key's length, nor which of several keys
 * matched changes the work done.
 */

/** SHA-256 of `text` (UTF-8). */
export async function digest(text: string): Promise<Uint8Array> {
  return new Uint8Array(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(text)));
}

/** Equal bytes, compared without an early exit. */
export function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  let difference = a.length ^ b.length;
  for (let i = 0; i < a.length && i < b.length; i++) difference |= a[i]! ^ b[i]!;
  return difference === 0;
}

export interface ApiKeyChecker {
  /** True when `given` is one of the keys. */
  matches(given: string): Promise<boolean>;
}

/** A checker for `keys` (their digests are computed once, on first use). */
export function apiKeyChecker(keys: readonly string[]): ApiKeyChecker {
  let expected: Promise<Uint8Array[]> | null = null;
  return {
    async matches(given) {
      expected ??= Promise.all(keys.map(digest));
      const [candidates, actual] = await Promise.all([expected, digest(given)]);
      let found = false;
      for (const candidate of candidates) found = sameBytes(candidate, actual) || found;
      return found;
    },
  };
}

/** The credentials of an `Authorization: Bearer <token>` header; null for any other form. */
export function bearerToken(header: string | null | undefined): string | null {
  if (header === null || header === undefined) return null;
  const match = /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(header.trim());
  return match === null ? null : match[1]!;
}
