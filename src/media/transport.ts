/**
 * One HTTP GET without redirects, as the fetcher needs it. The fetcher does every policy
 * check; a transport only connects, and when given `address` it must connect to that
 * address (the one the fetcher checked) whatever DNS says now.
 *
 * `createFetchTransport` uses the fetch API (workerd, browsers, Deno). It cannot pin the
 * address: the runtime resolves the name itself, so there the whitelist and the checks
 * on IP literals are the only defences against internal targets (see docs/media.md).
 * Under Node, node-transport.ts pins the checked address.
 */

export interface TransportRequest {
  url: URL;
  /** The checked IP address to connect to; null when the transport cannot pin (or for IP-literal hosts). */
  address: string | null;
  headers: Readonly<Record<string, string>>;
  signal: AbortSignal;
  connectTimeoutMs: number;
}

export interface TransportResponse {
  status: number;
  /** A response header, or null. */
  header(name: string): string | null;
  body: AsyncIterable<Uint8Array>;
  /** Closes the body and the connection; safe to call more than once. */
  cancel(): void;
}

export interface Transport {
  /** Whether `address` is honoured (the connection goes to the checked address). */
  readonly pinsAddress: boolean;
  request(req: TransportRequest): Promise<TransportResponse>;
}

/** Thrown by transports when the connection is not established within connectTimeoutMs. */
export class ConnectTimeoutError extends Error {
  constructor(readonly timeoutMs: number) {
    super(`connecting took longer than ${timeoutMs} ms`);
    this.name = 'ConnectTimeoutError';
  }
}

async function* readerChunks(reader: ReadableStreamDefaultReader<Uint8Array>): AsyncGenerator<Uint8Array> {
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return;
      yield value;
    }
  } finally {
    reader.cancel().catch(() => {});
  }
}

export function createFetchTransport(fetchImpl: typeof fetch = globalThis.fetch): Transport {
  return {
    pinsAddress: false,
    async request(req) {
      const response = await fetchImpl(req.url.href, {
        method: 'GET',
        headers: req.headers,
        redirect: 'manual',
        signal: req.signal,
      });
      const reader = response.body?.getReader();
      return {
        // Browsers hide manual redirects as status 0 ("opaqueredirect"): refused as a bad status.
        status: response.status,
        header: (name) => response.headers.get(name),
        body: reader === undefined ? emptyBody() : readerChunks(reader),
        cancel: () => {
          reader?.cancel().catch(() => {});
        },
      };
    },
  };
}

async function* emptyBody(): AsyncGenerator<Uint8Array> {}
