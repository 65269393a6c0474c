/**
 * A real HTTP server on 127.0.0.1 for fetcher tests, with routes the test declares and
 * a count of the TCP connections it accepted and still holds open.
 */
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

export type Route = (req: http.IncomingMessage, res: http.ServerResponse) => void;

export interface MediaServer {
  port: number;
  origin: string;
  /** Connections accepted since start. */
  accepted(): number;
  /** Host headers of the requests received, in order. */
  hosts: string[];
  /** Resolves once the server holds no open connection (fails after `timeoutMs`). */
  drained(timeoutMs?: number): Promise<void>;
  close(): Promise<void>;
}

export async function startMediaServer(routes: Record<string, Route>): Promise<MediaServer> {
  const sockets = new Set<Socket>();
  let accepted = 0;
  const hosts: string[] = [];
  const server = http.createServer((req, res) => {
    hosts.push(req.headers.host ?? '');
    const route = routes[new URL(req.url ?? '/', 'http://x').pathname];
    if (route === undefined) {
      res.writeHead(404).end('not found');
      return;
    }
    route(req, res);
  });
  server.on('connection', (socket) => {
    accepted++;
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    port,
    origin: `http://127.0.0.1:${port}`,
    accepted: () => accepted,
    hosts,
    async drained(timeoutMs = 2000) {
      const deadline = Date.now() + timeoutMs;
      while (sockets.size > 0) {
        if (Date.now() > deadline) throw new Error(`${sockets.size} connection(s) still open`);
        await new Promise((r) => setTimeout(r, 10));
      }
    },
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve, reject) => server.close((err) => (err ? reject(err) : resolve())));
    },
  };
}

/** Serves `body` with the given content type (and Content-Length). */
export function serve(body: Uint8Array | string, contentType: string): Route {
  return (_req, res) => {
    res.writeHead(200, { 'content-type': contentType, 'content-length': Buffer.byteLength(body) });
    res.end(body);
  };
}

export function redirect(location: string | ((req: http.IncomingMessage) => string), status = 302): Route {
  return (req, res) => {
    res.writeHead(status, { location: typeof location === 'string' ? location : location(req) });
    res.end();
  };
}
