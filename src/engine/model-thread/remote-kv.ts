import type { KvCache, KvPadding, KvRowSource, KvStore, RemoteKvHandle } from '../kv/types.js';
import type { InPlaceKvOps } from '../kv/in-place-step.js';
import { EMPTY_CACHE, type ToWorker, type WireRowSource } from './protocol.js';

/**
 * The main thread's side of the worker-owned KV caches: makes handles, and turns
 * repacks and releases into messages (no reply awaited: the worker runs them in order).
 */
export class RemoteKvStore implements KvStore {
  private nextId = EMPTY_CACHE + 1;
  /** Caches made and not released yet: 0 once the engine is idle, or the worker's memory leaks. */
  liveCaches = 0;

  constructor(readonly post: (message: ToWorker) => void) {}

  /** A handle for a cache the worker is about to create (a run's present, a repack's target). */
  create(shape: { batch: number; length: number; heads: number; headDim: number }): KvCache {
    const id = this.nextId++;
    let released = false;
    this.liveCaches += 1;
    const handle: RemoteKvHandle = {
      store: this,
      id,
      release: () => {
        if (released) return;
        released = true;
        this.liveCaches -= 1;
        this.post({ type: 'release', id });
      },
    };
    return { ...shape, keys: [], values: [], remote: handle };
  }

  /** repackKvCache in the worker. Empty caches (no slots) may be sources too; any other CPU cache may not. */
  repack(sources: readonly KvRowSource[], length: number, template: KvCache, padding: KvPadding): KvCache {
    const wire = wireSources(sources);
    const { heads, headDim } = template;
    const target = this.create({ batch: sources.length, length, heads, headDim });
    this.post({ type: 'repack', target: target.remote!.id, sources: wire, length, heads, headDim, padding });
    return target;
  }
}

/**
 * An in-place cache in the worker (kv/in-place-step.ts run there): compactions are messages;
 * a step's layout is made by the worker when it runs the step, since only it knows how
 * many slots its buffers hold, so this side sends each row's length and no mask. The
 * handles' `length` is the slots asked for, a lower bound of the worker's.
 */
export function remoteInPlaceKv(store: RemoteKvStore): InPlaceKvOps {
  return {
    compact(sources, current, needed) {
      const { heads, headDim } = current;
      const target = store.create({ batch: sources.length, length: needed, heads, headDim });
      store.post({ type: 'compact', target: target.remote!.id, current: remoteIdOf(current), sources: wireSources(sources), needed, heads, headDim });
      return target;
    },
    layout: (cache, cacheLengths) => ({ past: cache, attentionMask: NO_MASK, cacheLengths }),
  };
}

const NO_MASK = new BigInt64Array(0);

function wireSources(sources: readonly KvRowSource[]): WireRowSource[] {
  return sources.map((source) => {
    const { cache } = source;
    if (cache.remote) return { id: cache.remote.id, row: source.row, realLength: source.realLength, end: source.end };
    if (cache.length === 0 || source.realLength === 0) return { id: EMPTY_CACHE, row: 0, realLength: 0 };
    throw new Error('a KV cache held in this thread cannot join a cache owned by the model worker');
  });
}

/** The id a run feeds as its past: the handle's, or EMPTY_CACHE for a cache without slots. */
export function remoteIdOf(cache: KvCache): number {
  if (cache.remote) return cache.remote.id;
  if (cache.length === 0) return EMPTY_CACHE;
  throw new Error('a KV cache held in this thread cannot be fed to the model worker');
}
