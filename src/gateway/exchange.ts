/**
 * One client request as the gateway sees it, from arrival to the end of its response
 * body: its id (the client's X-Request-Id, else a new one; sent upstream and returned),
 * the W3C trace context it carries (traceparent / tracestate, passed upstream
 * unchanged when well-formed), the client key it authenticated with, and what the
 * upstream exchange gave (which upstream, time to first byte, tokens) for the request
 * log and /metrics.
 *
 * The exchange travels with the request in an AsyncLocalStorage (workerd has it under
 * nodejs_compat), so the calls the shared app's RemoteEngine makes for /generate carry
 * the same id and trace context as the forwarded OpenAI routes do.
 */
import { AsyncLocalStorage } from 'node:async_hooks';

export interface TokenUsage {
  prompt: number | null;
  completion: number | null;
}

export interface GatewayExchange {
  readonly id: string;
  readonly startedAt: number;
  /** Headers for every upstream request: x-request-id, traceparent, tracestate. */
  readonly upstreamHeaders: Record<string, string>;
  /** The authenticated client key's name; null with auth off or before authentication. */
  keyName: string | null;
  upstream: string | null;
  attempts: number;
  firstByteMs: number | null;
  usage: TokenUsage;
}

const REQUEST_ID = /^[\x21-\x7e]{1,128}$/;
/** version-traceid-parentid-flags, lower-case hex, ids not all zero (W3C Trace Context §3.2). */
const TRACEPARENT = /^[0-9a-f]{2}-(?!0{32})[0-9a-f]{32}-(?!0{16})[0-9a-f]{16}-[0-9a-f]{2}$/;

export function newExchange(request: Request, now: number): GatewayExchange {
  const given = request.headers.get('x-request-id')?.trim() ?? '';
  const id = REQUEST_ID.test(given) ? given : crypto.randomUUID().replaceAll('-', '');
  const upstreamHeaders: Record<string, string> = { 'x-request-id': id };
  const traceparent = request.headers.get('traceparent')?.trim().toLowerCase() ?? '';
  if (TRACEPARENT.test(traceparent) && !traceparent.startsWith('ff')) {
    upstreamHeaders.traceparent = traceparent;
    // tracestate means nothing without its traceparent (§3.3); 512 bytes is what vendors must keep.
    const tracestate = request.headers.get('tracestate')?.trim() ?? '';
    if (tracestate !== '' && tracestate.length <= 512 && /^[\x20-\x7e]+$/.test(tracestate)) upstreamHeaders.tracestate = tracestate;
  }
  return { id, startedAt: now, upstreamHeaders, keyName: null, upstream: null, attempts: 0, firstByteMs: null, usage: { prompt: null, completion: null } };
}

const storage = new AsyncLocalStorage<GatewayExchange>();

export function withExchange<T>(exchange: GatewayExchange, run: () => T): T {
  return storage.run(exchange, run);
}

/** The exchange of the request being served, if any. */
export function currentExchange(): GatewayExchange | undefined {
  return storage.getStore();
}
