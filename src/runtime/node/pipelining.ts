/**
 * A per-connection cap on pipelined requests (issue 41, family 8). HTTP/1.1 lets a client
 * send requests without waiting for answers; node:http parses every request a chunk holds
 * and queues their responses, so 4 connections × 50,000 GETs in single writes held the loop
 * up to 5.6 s between /health answers. Past maxPipelinedRequests requests waiting on one
 * connection (received, not yet answered), the connection is closed: no browser or HTTP
 * client pipelines that deep (curl and most browsers do not pipeline at all), and the work
 * one connection can cause is then at most one chunk of parsing.
 */
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';

export interface PipeliningStats {
  /** Connections closed for pipelining past the cap. */
  closed: number;
}

export function capPipelinedRequests(server: Server, maxPipelinedRequests: number): () => PipeliningStats {
  const waiting = new WeakMap<Socket, number>();
  let closed = 0;
  server.on('request', (request: IncomingMessage, response: ServerResponse) => {
    const socket = request.socket;
    if (socket.destroyed) return;
    const count = (waiting.get(socket) ?? 0) + 1;
    waiting.set(socket, count);
    response.once('close', () => waiting.set(socket, (waiting.get(socket) ?? 1) - 1));
    if (count > maxPipelinedRequests) {
      closed += 1;
      socket.destroy();
    }
  });
  return () => ({ closed });
}
