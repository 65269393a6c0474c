/**
 * dataParallelSize > 1: several engine processes behind one port (src/runtime/node/cluster.ts).
 */
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { golden } from '../helpers/model.js';
import { spawnFailingServer, spawnServer } from './spawn-server.js';

/** Pids of the engine processes below `root` (the cluster's workers carry ENGINE_PROCESS_INDEX). */
function engineProcessesUnder(root: number): number[] {
  const parentOf = new Map<number, number>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const ppid = /PPid:\s+(\d+)/.exec(readFileSync(`/proc/${entry}/status`, 'utf8'))?.[1];
      if (ppid !== undefined) parentOf.set(Number(entry), Number(ppid));
    } catch {
      // The process ended while we looked.
    }
  }
  const descends = (pid: number): boolean => {
    for (let current = parentOf.get(pid); current !== undefined && current > 1; current = parentOf.get(current)) {
      if (current === root) return true;
    }
    return false;
  };
  return [...parentOf.keys()].filter((pid) => {
    if (!descends(pid)) return false;
    try {
      return readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0').some((entry) => entry.startsWith('ENGINE_PROCESS_INDEX='));
    } catch {
      return false;
    }
  });
}

/** The server with two engine processes, once both listen (each announces itself). */
async function startTwoEngineServer() {
  const server = await spawnServer({ DATA_PARALLEL_SIZE: '2' });
  for (let waited = 0; (server.output().match(/Listening on/g) ?? []).length < 2 && waited < 30_000; waited += 100) {
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return server;
}

describe('data parallel server (DATA_PARALLEL_SIZE=2)', () => {
  it('runs two engine processes on one port, answers every request right, and stops them all on SIGTERM', async () => {
    const server = await startTwoEngineServer();
    let engines: number[] = [];
    try {
      expect(server.output()).toMatch(/Data parallel: starting 2 engine processes/);
      engines = engineProcessesUnder(server.child.pid!);
      expect(engines).toHaveLength(2);

      const texts = await Promise.all(
        Array.from({ length: 8 }, async () => {
          const response = await fetch(`${server.url}/v1/completions`, {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify({ model: 'stories260k', prompt: golden.prompt, temperature: 0, max_tokens: golden.completion_ids.length }),
          });
          expect(response.status).toBe(200);
          return ((await response.json()) as { choices: Array<{ text: string }> }).choices[0].text;
        }),
      );
      expect(texts).toEqual(Array(8).fill(golden.completion_text));

      // Each scrape reaches one engine process (a new connection each, handed out in turn);
      // each reports the traffic of both.
      for (let scrape = 0; scrape < 4; scrape++) {
        const metrics = await (await fetch(`${server.url}/metrics`, { headers: { connection: 'close' } })).text();
        expect(metrics).toContain('vllm:request_success_total{model_name="stories260k",finished_reason="length"} 8');
        expect(metrics).toContain(`vllm:generation_tokens_total{model_name="stories260k"} ${8 * golden.completion_ids.length}`);
      }
    } finally {
      expect(await server.stop('SIGTERM')).toBe(0);
    }
    expect(server.output().match(/Server stopped/g)).toHaveLength(2);
    for (const pid of engines) expect(() => process.kill(pid, 0)).toThrow();
  });

  it('exits with 1 and the engine processes\' own reason when they cannot start', async () => {
    // A folder that exists but holds no model: the engine processes find out (a missing one is refused before they start).
    const { code, output } = await spawnFailingServer({ DATA_PARALLEL_SIZE: '2', MODEL_DIR: mkdtempSync(join(tmpdir(), 'edge-llm-no-model-')) });
    expect(code).toBe(1);
    expect(output).toMatch(/Cannot load the model/);
    expect(output).toMatch(/stopping the server/);
    const missing = await spawnFailingServer({ DATA_PARALLEL_SIZE: '2', MODEL_DIR: '/nonexistent/model' });
    expect(missing.code).toBe(1);
    expect(missing.output).toMatch(/The model "\/nonexistent\/model" does not exist/);
    expect(missing.output).not.toMatch(/starting 2 engine processes/);
  });

  it('refuses a data-parallel size that is not a whole number', async () => {
    const { code, output } = await spawnFailingServer({ DATA_PARALLEL_SIZE: 'two' });
    expect(code).toBe(1);
    expect(output).toMatch(/dataParallelSize/);
  });

  it('stops the whole server (exit 1) when an engine process dies', async () => {
    const server = await startTwoEngineServer();
    const engines = engineProcessesUnder(server.child.pid!);
    expect(engines).toHaveLength(2);
    process.kill(engines[0], 'SIGKILL');
    const code = await new Promise<number | null>((resolve) => server.child.once('exit', resolve));
    expect(code).toBe(1);
    expect(server.output()).toMatch(/exited \(SIGKILL\): stopping the server/);
    for (const pid of engines) expect(() => process.kill(pid, 0)).toThrow();
  });
});
