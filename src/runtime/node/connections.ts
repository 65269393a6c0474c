/**
 * Connections under Node: idle ones must not lock out the clients that have something to
 * say. A socket that sent nothing yet, or a keep-alive one between requests, is idle; a
 * socket with a request in progress (its stream included) is busy. Past maxConnections,
 * the oldest idle socket is closed to make room for the new one (2,000 sockets that send
 * nothing used to fill the 1,024 places and have every new connection reset until their
 * headers timeout ran out); only when every place is busy is the new connection dropped.
 * Idle sockets also end on their own: one whose first request has not arrived within
 * headersTimeoutMs (Node's own headers timeout starts only with the first byte, so a
 * silent socket was held forever), a keep-alive one after keepAliveTimeoutMs.
 */
import type { IncomingMessage, Server, ServerOptions, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { ServerConfig } from '../../config/server-config.js';

type ConnectionSettings = Pick<ServerConfig, 'headersTimeoutMs' | 'requestTimeoutMs' | 'keepAliveTimeoutMs' | 'maxConnections'>;

/** node:http's options for these settings (Node's own defaults hold a slow client for 60 s and 300 s). */
export function nodeServerOptions(config: ConnectionSettings): ServerOptions {
  return {
    headersTimeout: config.headersTimeoutMs,
    requestTimeout: config.requestTimeoutMs,
    keepAliveTimeout: config.keepAliveTimeoutMs,
    // How often Node checks the first two (default 30 s: a 10 s timeout could take 40).
    connectionsCheckingInterval: Math.max(100, Math.min(1000, Math.floor(config.headersTimeoutMs / 4))),
  };
}

export interface ConnectionStats {
  open: number;
  idle: number;
  /** Idle sockets closed to make room. */
  evicted: number;
  /** New connections dropped because every place was busy. */
  refused: number;
}

/** Caps `server`'s connections at maxConnections, evicting the oldest idle socket first. */
export function capConnections(
  server: Server,
  config: Pick<ConnectionSettings, 'maxConnections' | 'keepAliveTimeoutMs' | 'headersTimeoutMs'>,
): () => ConnectionStats {
  // Insertion order is age: a socket that goes idle again moves to the end.
  const idle = new Set<Socket>();
  const busy = new Map<Socket, number>();
  /** Sockets waiting for their first request: the timer that closes a silent one. */
  const firstRequest = new Map<Socket, NodeJS.Timeout>();
  let open = 0;
  let evicted = 0;
  let refused = 0;
  server.keepAliveTimeout = config.keepAliveTimeoutMs;

  server.on('connection', (socket: Socket) => {
    open += 1;
    idle.add(socket);
    // A socket that sent a first byte is Node's to time out (with its 408).
    const silent = setTimeout(() => {
      if (socket.bytesRead === 0) socket.destroy();
    }, config.headersTimeoutMs);
    silent.unref();
    firstRequest.set(socket, silent);
    socket.once('close', () => {
      clearTimeout(silent);
      firstRequest.delete(socket);
      open -= 1;
      idle.delete(socket);
      busy.delete(socket);
    });
    if (open <= config.maxConnections) return;
    const oldest = idle.values().next().value;
    if (oldest !== undefined && oldest !== socket) {
      evicted += 1;
      idle.delete(oldest);
      oldest.destroy();
    } else {
      refused += 1;
      socket.destroy();
    }
  });

  server.on('request', (request: IncomingMessage, response: ServerResponse) => {
    const socket = request.socket;
    clearTimeout(firstRequest.get(socket));
    firstRequest.delete(socket);
    idle.delete(socket);
    busy.set(socket, (busy.get(socket) ?? 0) + 1);
    response.once('close', () => {
      const left = (busy.get(socket) ?? 1) - 1;
      if (left > 0) {
        busy.set(socket, left);
        return;
      }
      busy.delete(socket);
      if (!socket.destroyed) idle.add(socket);
    });
  });

  return () => ({ open, idle: idle.size, evicted, refused });
}
