/**
 * Makes "many requests at once" mean at once on a loaded machine: after `gather(n)`, the next
 * n calls passed through the gate wait until all n have arrived, then start in one synchronous
 * pass (the requests' bodies were read and parsed one after another before that; a slow
 * machine could otherwise finish the first calls before the last arrived).
 */
export interface CallGate {
  gather(count: number): void;
  /** Makes `call` now, or, while gathering, once the gathered calls have all arrived. */
  pass<T>(call: () => Promise<T>): Promise<T>;
}

export function callGate(): CallGate {
  const waiting: Array<() => void> = [];
  let gathering = 0;
  return {
    gather(count) {
      gathering = count;
    },
    pass(call) {
      if (gathering === 0) return call();
      const turn = new Promise<void>((resolve) => waiting.push(resolve));
      if (waiting.length === gathering) {
        gathering = 0;
        for (const release of waiting.splice(0)) release();
      }
      return turn.then(call);
    },
  };
}
