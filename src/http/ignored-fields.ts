import type { z } from 'zod';

/**
 * Fields of a request body that the endpoint's schema does not know are ignored (the
 * schemas strip them), as vLLM ignores them, with one warning line in the server log
 * naming them, so a misspelt parameter does not go unnoticed.
 */
export function warnIgnoredFields(schema: z.ZodObject, body: unknown): void {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) return;
  const ignored = Object.keys(body).filter((key) => !(key in schema.shape));
  if (ignored.length === 0) return;
  console.warn(`The following fields were present in the request but ignored: ${ignored.join(', ')}`);
}
