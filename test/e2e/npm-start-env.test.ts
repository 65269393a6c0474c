/**
 * `npm start` sets glibc's malloc tunables before `exec node` (package.json's start script),
 * and the e2e tests and the bench start the server with npmStartEnv()'s reading of them. Held
 * against the shell itself: `sh -c` runs the start script's own words with `exec env` in
 * place of node, with and without a value of the user's, and what it exports must be what
 * npmStartEnv() gives.
 */
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { npmStartEnv } from '../../scripts/build-server.js';
import { REPO_ROOT } from '../docs/doc-blocks.js';

const run = promisify(execFile);
const startScript = (JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as { scripts: { start: string } }).scripts.start;

/** What the shell exports when it runs the start script up to `exec`, then `env` instead of node. */
async function shellExports(env: NodeJS.ProcessEnv): Promise<Record<string, string>> {
  const prefix = startScript.slice(0, startScript.indexOf('exec node'));
  const { stdout } = await run('sh', ['-c', `${prefix}exec env`], { env });
  return Object.fromEntries(stdout.split('\n').filter(Boolean).map((line) => [line.slice(0, line.indexOf('=')), line.slice(line.indexOf('=') + 1)]));
}

describe("npm start's environment", () => {
  it('keeps freed memory in malloc (mmap and trim thresholds): what the shell exports is what the tests and bench start with', async () => {
    const { GLIBC_TUNABLES: _, ...withoutTunables } = process.env;
    const settings = npmStartEnv(withoutTunables);
    expect(settings.GLIBC_TUNABLES).toMatch(/glibc\.malloc\.mmap_threshold=\d+/);
    expect(settings.GLIBC_TUNABLES).toMatch(/glibc\.malloc\.trim_threshold=\d+/);
    const exported = await shellExports(withoutTunables);
    for (const [name, value] of Object.entries(settings)) expect(exported[name]).toBe(value);
  });

  it("a user's own GLIBC_TUNABLES is kept, an empty one too (the settings turned off), as the shell keeps it", async () => {
    for (const value of ['glibc.malloc.arena_max=2', '']) {
      const mine = { ...process.env, GLIBC_TUNABLES: value };
      expect(npmStartEnv(mine).GLIBC_TUNABLES).toBe(value);
      expect((await shellExports(mine)).GLIBC_TUNABLES).toBe(value);
    }
  });
});
