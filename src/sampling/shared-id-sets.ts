/**
 * Token-id sets built once per request, not once per sequence: a request's n sequences (and
 * its beams) share one SamplingParams, so its stop ids become one Set and min_tokens' banned
 * ids one list, whatever n is (issue 41: a Set per sequence of 1.9 M ids × n = 32 took 1.6 GB).
 * Keyed weakly on the params' own arrays: they go when the request does.
 */
const stopIdSets = new WeakMap<readonly number[], ReadonlySet<number>>();
const bannedIdLists = new WeakMap<readonly number[], WeakMap<readonly number[], Int32Array>>();

/** The request's stop_token_ids as a Set, shared by its sequences. */
export function sharedStopIdSet(stopTokenIds: readonly number[]): ReadonlySet<number> {
  let set = stopIdSets.get(stopTokenIds);
  if (set === undefined) {
    set = new Set(stopTokenIds);
    stopIdSets.set(stopTokenIds, set);
  }
  return set;
}

/** EOS ids plus the request's stop ids, distinct and inside the vocabulary, shared by its sequences. */
export function sharedBannedIds(eosTokenIds: readonly number[], stopTokenIds: readonly number[], vocabSize: number): Int32Array {
  let byEos = bannedIdLists.get(stopTokenIds);
  if (byEos === undefined) {
    byEos = new WeakMap();
    bannedIdLists.set(stopTokenIds, byEos);
  }
  let banned = byEos.get(eosTokenIds);
  if (banned === undefined) {
    const ids = new Set<number>();
    for (const id of [...eosTokenIds, ...stopTokenIds]) if (Number.isInteger(id) && id >= 0 && id < vocabSize) ids.add(id);
    banned = Int32Array.from(ids);
    byEos.set(eosTokenIds, banned);
  }
  return banned;
}
