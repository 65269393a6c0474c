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
import { Server as NetServer, type Socket } from 'node:net';
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

export interface ConnectionCap {
  stats(): ConnectionStats;
  /**
   * For a shutting-down server. Every response from now on (those being prepared too) says
   * `Connection: close`, so no client sends another request on a socket about to close.
   * Idle sockets are closed once a loop turn read nothing from them (node:http's
   * closeIdleConnections also closes a socket whose request is in the kernel's buffer, not
   * yet read by a busy loop). The listener closes once a loop turn accepted nothing: a busy
   * loop takes one queued connection a turn, and closing earlier reset the connections the
   * kernel still held, whose requests had been sent (seen in CI). Those taken now get the
   * app's "shutting down" 503. `server` emits 'close' when the last connection ends.
   */
  drain(): void;
  /** Closes the listener now, connections still queued or not (the grace period is over). */
  stopAccepting(): void;
}

/** How often a draining server looks at its listener and idle sockets; a look that saw nothing new since the last closes them. */
const DRAIN_LOOK_MS = 50;

/** Caps `server`'s connections at maxConnections, evicting the oldest idle socket first. */
export function capConnections(
  server: Server,
  config: Pick<ConnectionSettings, 'maxConnections' | 'keepAliveTimeoutMs' | 'headersTimeoutMs'>,
): ConnectionCap {
  // Insertion order is age: a socket that goes idle again moves to the end.
  const idle = new Set<Socket>();
  const busy = new Map<Socket, number>();
  /** Sockets waiting for their first request: the timer that closes a silent one. */
  const firstRequest = new Map<Socket, NodeJS.Timeout>();
  const responding = new Set<ServerResponse>();
  let open = 0;
  let evicted = 0;
  let refused = 0;
  let draining = false;
  let accepted = 0;
  const closeAfter = (response: ServerResponse) => {
    if (!response.headersSent) response.setHeader('connection', 'close');
  };
  server.keepAliveTimeout = config.keepAliveTimeoutMs;

  server.on('connection', (socket: Socket) => {
    open += 1;
    accepted += 1;
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
    responding.add(response);
    if (draining) closeAfter(response);
    response.once('close', () => {
      responding.delete(response);
      const left = (busy.get(socket) ?? 1) - 1;
      if (left > 0) {
        busy.set(socket, left);
        return;
      }
      busy.delete(socket);
      if (!socket.destroyed) idle.add(socket);
    });
  });

  const bytesReadAtLastLook = new WeakMap<Socket, number>();
  const closeQuietIdle = () => {
    for (const socket of [...idle]) {
      if (bytesReadAtLastLook.get(socket) === socket.bytesRead) socket.destroy();
      else bytesReadAtLastLook.set(socket, socket.bytesRead);
    }
  };
  let listening = true;
  const stopAccepting = () => {
    if (!listening) return;
    listening = false;
    // net's close, not node:http's: that one also closes every idle socket at once.
    NetServer.prototype.close.call(server);
  };
  let acceptedAtLastLook = -1;
  const look = () => {
    closeQuietIdle();
    if (accepted === acceptedAtLastLook) stopAccepting();
    acceptedAtLastLook = accepted;
  };
  return {
    stats: () => ({ open, idle: idle.size, evicted, refused }),
    drain() {
      if (draining) return;
      draining = true;
      for (const response of responding) closeAfter(response);
      look();
      setInterval(look, DRAIN_LOOK_MS).unref();
    },
    stopAccepting,
  };
}
