/**
 * A server-wide budget of request bytes in flight (issue 41, family 7): 128 connections each
 * sending 16 MiB minus the last byte held 2.18 GB until the request timeout. Each request
 * with a body reserves its declared Content-Length (a chunked body: maxRequestBytes, the most
 * it may be) before a byte of it is read, and gives it back when the app has answered; a
 * request that does not fit the budget is refused at once with a 503 and Retry-After, its
 * body never read (node:http discards it), the connection closed.
 */
import { errorResponse, HttpError } from '../../http/errors.js';

type FetchHandler = (request: Request, ...rest: never[]) => Response | Promise<Response>;

export interface BytesInFlight {
  /** Bytes reserved by requests being received or handled. */
  readonly reserved: number;
  /** Requests refused for the budget. */
  readonly refused: number;
}

export function budgetRequestBytes<F extends FetchHandler>(fetch: F, budgetBytes: number, maxRequestBytes: number): { fetch: F; stats: () => BytesInFlight } {
  let reserved = 0;
  let refused = 0;
  const wrapped = (async (request: Request, ...rest: never[]) => {
    const declared = request.headers.get('content-length');
    const chunked = request.headers.get('transfer-encoding') !== null;
    const length = chunked ? maxRequestBytes : declared === null ? 0 : Math.min(Number.parseInt(declared, 10) || 0, maxRequestBytes);
    if (length === 0) return fetch(request, ...rest);
    if (reserved + length > budgetBytes) {
      refused += 1;
      const response = errorResponse(
        new HttpError(
          503,
          'ServiceUnavailableError',
          `The server is receiving ${reserved} bytes of other requests' bodies; this one's ${length} would pass the ${budgetBytes} it takes at once (maxRequestBytesInFlight). Retry shortly.`,
          null,
          { 'retry-after': '1', connection: 'close' },
        ),
      );
      return response;
    }
    reserved += length;
    try {
      return await fetch(request, ...rest);
    } finally {
      reserved -= length;
    }
  }) as F;
  return { fetch: wrapped, stats: () => ({ reserved, refused }) };
}
