/** The real node:http stack in-process on an ephemeral loopback port, so a test can watch the engine and the app's records. */
import type { AddressInfo } from 'node:net';
import { serve, type ServerType } from '@hono/node-server';

export interface InProcessServer {
  url: string;
  close(): Promise<void>;
}

export function serveInProcess(fetch: Parameters<typeof serve>[0]['fetch']): Promise<InProcessServer> {
  return new Promise((resolve) => {
    const server: ServerType = serve({ fetch, hostname: '127.0.0.1', port: 0 }, (info: AddressInfo) => {
      resolve({
        url: `http://127.0.0.1:${info.port}`,
        close: () =>
          new Promise((done) => {
            server.close(() => done());
            // fetch keeps connections alive; don't wait for them to time out.
            if ('closeAllConnections' in server) server.closeAllConnections();
          }),
      });
    });
  });
}
