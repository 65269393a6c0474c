/**
 * Node side of the service-binding test: what a Worker's `UPSTREAM` binding reaches. It
 * plays an inference backend that demands an API key (as vLLM's --api-key does) and
 * forwards accepted requests, streaming, to the real Node server.
 */
import { fetch, Response, type Request } from 'miniflare';

export const TEST_UPSTREAM_API_KEY = 'upstream-test-key';

export function keyCheckingUpstream(nodeServerUrl: string): (request: Request) => Promise<Response> {
  return async (request) => {
    if (request.headers.get('authorization') !== `Bearer ${TEST_UPSTREAM_API_KEY}`) {
      return Response.json({ object: 'error', message: 'Invalid API key.', type: 'AuthenticationError', param: null, code: 401 }, { status: 401 });
    }
    const { pathname, search } = new URL(request.url);
    return fetch(`${nodeServerUrl}${pathname}${search}`, {
      method: request.method,
      headers: { 'content-type': request.headers.get('content-type') ?? 'application/json' },
      body: await request.text(),
    });
  };
}
