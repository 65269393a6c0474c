import { yieldToEventLoop } from '../threads/yield.js';
import { parseJsonBodyInSlices } from '../protocol/json.js';
import { badRequest } from './errors.js';

/**
 * Reads a request body as JSON. The Content-Type was checked before the route ran
 * (security/middleware.ts; with requireJsonContentType off, any body is read as JSON,
 * as `curl -d` sends it). Big integers (uint64 seeds) come back as bigint.
 */
export async function readJsonBody(request: Request): Promise<unknown> {
  let text: string;
  try {
    text = await request.text();
  } catch {
    throw badRequest('The request body could not be read.');
  }
  // In slices: a 16 MiB body of millions of small values held the loop for seconds in one pass.
  return parseJsonBodyInSlices(text, yieldToEventLoop);
}
