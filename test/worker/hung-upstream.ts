/**
 * Node side of the gateway's timeout tests: a loopback HTTP server that misbehaves as a
 * hung inference server does, by path prefix (the gateway appends /v1/... to it):
 *  - /hang/...    accepts the connection and reads the request, never answers (SIGSTOP'd server);
 *  - /silent/...  sends 200 and event-stream headers, never a byte of body;
 *  - /stall/...   sends one completion event, then goes silent mid-stream.
 * `/__hung/open` says how many requests it is holding, so a test can see the gateway let go.
 */
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

export async function startHungUpstream(): Promise<{ url: string; stop(): Promise<void> }> {
  const sockets = new Set<Socket>();
  const held = new Set<ServerResponse>();
  const server = createServer((request, response) => {
    const path = request.url ?? '/';
    if (path === '/__hung/open') {
      response.setHeader('content-type', 'application/json');
      response.end(JSON.stringify({ open: held.size }));
      return;
    }
    request.resume();
    held.add(response);
    response.on('close', () => held.delete(response));
    if (path.startsWith('/silent/')) {
      response.writeHead(200, { 'content-type': 'text/event-stream' });
      response.flushHeaders();
    } else if (path.startsWith('/stall/')) {
      response.writeHead(200, { 'content-type': 'text/event-stream' });
      const chunk = { id: 'cmpl-stall', object: 'text_completion', choices: [{ index: 0, text: ' Once', finish_reason: null }] };
      response.write(`data: ${JSON.stringify(chunk)}\n\n`);
    }
    // /hang/ and anything else: never answered.
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  const port = await new Promise<number>((resolve) => server.listen(0, '127.0.0.1', () => resolve((server.address() as AddressInfo).port)));
  return {
    url: `http://127.0.0.1:${port}`,
    stop: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}
