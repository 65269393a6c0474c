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
  // Names are clipped and counted: a body of many long keys must not flood the log.
  const named = ignored.slice(0, 10).map((key) => (key.length > 40 ? `${key.slice(0, 40)}…` : key));
  const more = ignored.length > named.length ? ` and ${ignored.length - named.length} more` : '';
  console.warn(`The following fields were present in the request but ignored: ${named.join(', ')}${more}`);
}
