import { describe, expect, it } from 'vitest';
import { UpstreamError } from '../../src/engine/remote/errors.js';
import { UpstreamPool } from '../../src/gateway/upstream-pool.js';
import type { UpstreamTarget } from '../../src/gateway/upstreams.js';
import { invalidRequest } from '../../src/common/protocol-error.js';

type Behaviour = 'ok' | 'refused' | 503;

function target(name: string, weight: number, behaviour: { now: Behaviour }, calls: string[], model = 'm'): UpstreamTarget {
  return {
    name,
    url: `http://${name}.internal`,
    weight,
    model,
    upstreamModel: model,
    dialect: 'vllm',
    unsupported: new Set(),
    timeouts: { connectMs: 1000, firstByteMs: 1000, idleMs: 1000 },
    toolCalls: false,
    async fetch(url) {
      calls.push(`${name} ${url}`);
      if (behaviour.now === 'refused') throw new Error('connect ECONNREFUSED');
      if (behaviour.now === 503) return new Response('busy', { status: 503 });
      return new Response(`from ${name}`);
    },
  };
}

describe('UpstreamPool', () => {
  it('orders healthy upstreams by weighted lottery', () => {
    const calls: string[] = [];
    const heavy = target('heavy', 3, { now: 'ok' }, calls);
    const light = target('light', 1, { now: 'ok' }, calls);
    let draw = 0;
    // Each ordering draws once per remaining upstream: the first draw decides who leads.
    const leads = [0.1, 0.5, 0.74, 0.76, 0.99];
    const pool = new UpstreamPool([heavy, light], { random: () => (draw++ % 2 === 0 ? leads[(draw - 1) / 2] : 0) });
    const firsts = leads.map(() => pool.candidates('m')[0].name);
    // heavy holds [0, 0.75) of the lottery.
    expect(firsts).toEqual(['heavy', 'heavy', 'heavy', 'light', 'light']);
    expect(pool.candidates('m')).toHaveLength(2);
    expect(pool.candidates('other')).toEqual([]);
  });

  it('fails over on connect failures (retried once) and 503s, marks the upstream down, and lets it back after the delay', async () => {
    const calls: string[] = [];
    const a = { now: 'refused' as Behaviour };
    let now = 0;
    const pool = new UpstreamPool([target('a', 1000, a, calls), target('b', 1, { now: 'ok' }, calls)], {
      random: () => 0,
      now: () => now,
      retryDownAfterMs: 5000,
    });
    const sent = await pool.send('m', '/v1/completions', () => '{}');
    expect(sent.target.name).toBe('b');
    expect(await sent.response.text()).toBe('from b');
    expect(calls).toEqual(['a http://a.internal/v1/completions', 'a http://a.internal/v1/completions', 'b http://b.internal/v1/completions']);
    // Down: b is tried first now, a only as a last resort.
    expect(pool.candidates('m').map((t) => t.name)).toEqual(['b', 'a']);
    now = 5000;
    a.now = 'ok';
    expect(pool.candidates('m').map((t) => t.name)).toEqual(['a', 'b']);
  });

  it('returns the last 503 when every upstream is busy, and names the upstreams (not their URLs) when none answers', async () => {
    const calls: string[] = [];
    const busy = new UpstreamPool([target('a', 1, { now: 503 }, calls), target('b', 1, { now: 503 }, calls)]);
    expect((await busy.send('m', '/v1/completions', () => '{}')).response.status).toBe(503);

    const down = new UpstreamPool([target('a', 1, { now: 'refused' }, calls)]);
    const error = await down.send('m', '/v1/completions', () => '{}').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(UpstreamError);
    expect((error as Error).message).toMatch(/a: cannot connect/);
    expect((error as Error).message).not.toMatch(/internal/);
  });

  it('skips an upstream whose dialect refuses the request and throws the refusal when none can take it', async () => {
    const calls: string[] = [];
    const pool = new UpstreamPool([target('strict', 1000, { now: 'ok' }, calls), target('lenient', 1, { now: 'ok' }, calls)], { random: () => 0 });
    const refuseStrict = (t: UpstreamTarget) => {
      if (t.name === 'strict') throw invalidRequest('no', 'guided_regex');
      return '{}';
    };
    expect((await pool.send('m', '/v1/completions', refuseStrict)).target.name).toBe('lenient');
    await expect(pool.send('m', '/v1/completions', () => { throw invalidRequest('no', 'guided_regex'); })).rejects.toMatchObject({ param: 'guided_regex' });
  });

  it('health checks mark upstreams up and down', async () => {
    const calls: string[] = [];
    const b = { now: 'refused' as Behaviour };
    const pool = new UpstreamPool([target('a', 1, { now: 'ok' }, calls), target('b', 1, b, calls)]);
    await pool.probe();
    expect(pool.targets.map((t) => pool.isHealthy(t))).toEqual([true, false]);
    expect(calls).toContain('b http://b.internal/health');
    b.now = 'ok';
    await pool.probe();
    expect(pool.targets.map((t) => pool.isHealthy(t))).toEqual([true, true]);
  });

  it('health checks count a loading upstream (503) as down and one without a /health route (404) as up', async () => {
    const answering = (status: number): UpstreamTarget => ({
      ...target(`s${status}`, 1, { now: 'ok' }, []),
      fetch: async () => new Response('', { status }),
    });
    const pool = new UpstreamPool([answering(503), answering(404), answering(200)]);
    await pool.probe();
    expect(pool.targets.map((t) => pool.isHealthy(t))).toEqual([false, true, true]);
  });
});
