/** The LoRA settings: loraModules / LORA_MODULES in vLLM's name=path form, maxLoras, maxLoraRank, runtime updates. */
import { describe, expect, it } from 'vitest';
import { loraEnabled, resolveServerConfig } from '../../src/config/server-config.js';

describe('LoRA settings', () => {
  it('are off by default', () => {
    const config = resolveServerConfig({});
    expect(config.loraModules).toEqual([]);
    expect(config.maxLoras).toBe(4);
    expect(config.maxLoraRank).toBe(16);
    expect(config.allowRuntimeLoraUpdating).toBe(false);
    expect(loraEnabled(config)).toBe(false);
  });

  it('read LORA_MODULES, MAX_LORAS, MAX_LORA_RANK and VLLM_ALLOW_RUNTIME_LORA_UPDATING from the environment', () => {
    const config = resolveServerConfig({
      env: { LORA_MODULES: 'story=./adapters/story, tale=/srv/tale', MAX_LORAS: '2', MAX_LORA_RANK: '32', VLLM_ALLOW_RUNTIME_LORA_UPDATING: 'True', LORA_ROOT: '/srv/loras' },
    });
    expect(config.loraModules).toEqual([
      { name: 'story', path: './adapters/story' },
      { name: 'tale', path: '/srv/tale' },
    ]);
    expect([config.maxLoras, config.maxLoraRank, config.allowRuntimeLoraUpdating, config.loraRoot]).toEqual([2, 32, true, '/srv/loras']);
    expect(loraEnabled(config)).toBe(true);
  });

  it('take a list of name=path strings or objects in the config file', () => {
    const config = resolveServerConfig({ file: { loraModules: ['a=./x', { name: 'b', path: './y' }] } });
    expect(config.loraModules).toEqual([
      { name: 'a', path: './x' },
      { name: 'b', path: './y' },
    ]);
  });

  it('refuse malformed entries and duplicate names, naming the setting', () => {
    expect(() => resolveServerConfig({ env: { LORA_MODULES: 'story' } })).toThrow(/loraModules.*entry "story" must be name=path/s);
    expect(() => resolveServerConfig({ env: { LORA_MODULES: 'a=./x,a=./y' } })).toThrow(/loraModules.*names a LoRA adapter twice/s);
    expect(() => resolveServerConfig({ file: { maxLoras: 0 } })).toThrow(/maxLoras/);
  });
});
