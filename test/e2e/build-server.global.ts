/** Vitest global setup (node project): builds dist/node/server.js once, as `npm start`'s prestart does. */
import { buildServer } from '../../scripts/build-server.js';

export default async function setup(): Promise<void> {
  await buildServer();
}
