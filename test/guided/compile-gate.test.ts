import { describe, expect, it, vi } from 'vitest';
import { CompileGate } from '../../src/guided/compile-gate.js';

describe('CompileGate', () => {
  it('holds a named client to its share, requests naming none only to the queue bound', async () => {
    const gate = new CompileGate({ maxQueued: 4, maxQueuedPerClient: 1, deadlineMs: 10_000 });
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const first = gate.run('a', () => held.then(() => 'a1'));
    await expect(gate.run('a', async () => 'a2')).rejects.toMatchObject({ kind: 'rate_limited' });
    const anonymous = [gate.run(undefined, async () => 'x'), gate.run(undefined, async () => 'y'), gate.run(undefined, async () => 'z')];
    await expect(gate.run(undefined, async () => 'over')).rejects.toMatchObject({ kind: 'overloaded' });
    release();
    expect(await first).toBe('a1');
    expect(await Promise.all(anonymous)).toEqual(['x', 'y', 'z']);
    // Every compile settled: the client's share and the queue are free again (threads/client-shares.ts counts them back).
    expect(await gate.run('a', async () => 'a3')).toBe('a3');
    await vi.waitFor(() => expect(gate.size).toBe(0));
  });
});
