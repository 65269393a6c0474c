import { describe, expect, it } from 'vitest';
import {
  autoIntraOpThreads,
  autoModelThread,
  MULTI_THREAD_MIN_WEIGHT_BYTES,
  planThreads,
  WORKER_MIN_WEIGHT_BYTES,
} from '../../../src/engine/model-thread/thread-plan.js';

const MB = 1024 * 1024;

describe('automatic thread settings', () => {
  it('gives a small model one intra-op thread and a large one the cores, shared by the engine processes, at most 4', () => {
    expect(autoIntraOpThreads({ weightBytes: 1 * MB, cores: 8 })).toBe(1);
    expect(autoIntraOpThreads({ weightBytes: MULTI_THREAD_MIN_WEIGHT_BYTES - 1, cores: 8 })).toBe(1);
    expect(autoIntraOpThreads({ weightBytes: MULTI_THREAD_MIN_WEIGHT_BYTES, cores: 2 })).toBe(2);
    expect(autoIntraOpThreads({ weightBytes: 500 * MB, cores: 16 })).toBe(4);
    expect(autoIntraOpThreads({ weightBytes: 500 * MB, cores: 4, processes: 2 })).toBe(2);
    expect(autoIntraOpThreads({ weightBytes: 500 * MB, cores: 2, processes: 4 })).toBe(1);
    expect(autoIntraOpThreads({ weightBytes: 500 * MB, cores: 1 })).toBe(1);
  });

  it('moves a large model’s calls to a worker thread, never with the wasm backend', () => {
    expect(autoModelThread({ weightBytes: 1 * MB, cores: 2 })).toBe('main');
    expect(autoModelThread({ weightBytes: WORKER_MIN_WEIGHT_BYTES, cores: 2 })).toBe('worker');
    expect(autoModelThread({ weightBytes: 500 * MB, cores: 2, backend: 'wasm' })).toBe('main');
  });

  it('keeps explicit settings and says how each value was chosen', () => {
    const explicit = planThreads({ intraOpNumThreads: 3, modelThread: 'main' }, { weightBytes: 500 * MB, cores: 2 });
    expect(explicit).toMatchObject({ intraOpNumThreads: 3, modelThread: 'main' });
    expect(explicit.reasons.join('; ')).toMatch(/3 intra-op threads \(intraOpNumThreads\).*main thread \(modelThread\)/);
    const auto = planThreads({ intraOpNumThreads: 'auto', modelThread: 'auto' }, { weightBytes: 1 * MB, cores: 2 });
    expect(auto).toMatchObject({ intraOpNumThreads: 1, modelThread: 'main' });
    expect(auto.reasons.join('; ')).toMatch(/1 intra-op thread \(auto.*main thread \(auto/);
    expect(planThreads({}, { weightBytes: 500 * MB, cores: 2 })).toMatchObject({ intraOpNumThreads: 2, modelThread: 'worker' });
  });
});
