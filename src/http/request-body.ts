import { parseJsonBody } from '../protocol/json.js';
import { badRequest } from './errors.js';

/** Content types read as JSON: application/json and the +json family, like FastAPI. */
function isJsonContentType(contentType: string | null): boolean {
  if (contentType === null || contentType.trim() === '') return true;
  const mediaType = contentType.split(';')[0]!.trim().toLowerCase();
  return mediaType === 'application/json' || (mediaType.startsWith('application/') && mediaType.endsWith('+json'));
}

/**
 * Reads a request body as JSON. A missing Content-Type is accepted (JSON assumed);
 * any other type is refused rather than guessed at. Big integers (uint64 seeds) come
 * back as bigint.
 */
export async function readJsonBody(request: Request): Promise<unknown> {
  const contentType = request.headers.get('content-type');
  if (!isJsonContentType(contentType)) {
    throw badRequest(`Expected a JSON request body (Content-Type: application/json), got Content-Type: ${contentType}.`);
  }
  let text: string;
  try {
    text = await request.text();
  } catch {
    throw badRequest('The request body could not be read.');
  }
  return parseJsonBody(text);
}
