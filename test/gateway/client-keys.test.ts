import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { ClientKeys } from '../../src/gateway/client-keys.js';
import { MemoryTokenBudget } from '../../src/gateway/edge-limits.js';

describe('ClientKeys', () => {
  it('identifies a key given in clear or as the SHA-256 that sha256sum prints, and only that key', async () => {
    const bobDigest = createHash('sha256').update('sk-bob').digest('hex');
    const keys = await ClientKeys.fromEnv({
      API_KEY: 'sk-default',
      API_KEYS: JSON.stringify([
        { name: 'alice', key: 'sk-alice', tokens_per_minute: 100 },
        { name: 'bob', sha256: bobDigest.toUpperCase() },
      ]),
    });
    expect(await keys!.identify('sk-alice')).toEqual({ name: 'alice', limits: { tokensPerMinute: 100 } });
    expect((await keys!.identify('sk-bob'))?.name).toBe('bob');
    expect((await keys!.identify('sk-default'))?.name).toBe('default');
    expect(await keys!.identify('sk-bo')).toBeNull();
    expect(await keys!.identify(bobDigest)).toBeNull();
  });

  it('is null with no key set, and refuses what it cannot read', async () => {
    expect(await ClientKeys.fromEnv({ API_KEY: '  ' })).toBeNull();
    await expect(ClientKeys.fromEnv({ VLLM_API_KEY: ['a', 'b'] })).rejects.toThrow(/VLLM_API_KEY must be one key as a string, got a list/);
    await expect(ClientKeys.fromEnv({ API_KEYS: '[]' })).rejects.toThrow(/non-empty/);
    await expect(ClientKeys.fromEnv({ API_KEYS: [{ name: 'a', sha256: 'abc' }] })).rejects.toThrow(/64 hex digits/);
    await expect(ClientKeys.fromEnv({ API_KEYS: [{ name: 'a', key: 'k', max_concurrent_requests: 0 }] })).rejects.toThrow(/positive number/);
    await expect(ClientKeys.fromEnv({ API_KEY: 'k', API_KEYS: [{ name: 'b', key: 'k' }] })).rejects.toThrow(/same key/);
  });
});

describe('MemoryTokenBudget', () => {
  it('admits while the bucket is above zero, lets one request overdraw it, and says when the debt is refilled', () => {
    let now = 0;
    const budget = new MemoryTokenBudget(60, () => now);
    expect(budget.admit('k')).toEqual({ allowed: true });
    budget.spend('k', 90);
    // 30 tokens of debt, refilled at one per second, plus one to be above zero.
    expect(budget.admit('k')).toEqual({ allowed: false, retryAfterSeconds: 31 });
    expect(budget.admit('other')).toEqual({ allowed: true });
    now = 31_000;
    expect(budget.admit('k')).toEqual({ allowed: true });
  });
});
