/**
 * Round trip of the two channels a worker-thread model call could use, with a decode
 * step's payload (inputs out, logits back): MessagePort with transferred buffers, and a
 * SharedArrayBuffer with Atomics.wait in the worker and Atomics.waitAsync here.
 *
 *   npx tsx scripts/threads/measure-channel.ts [round trips] [logits floats]
 */
import { performance } from 'node:perf_hooks';
import { Worker } from 'node:worker_threads';

const trips = Number(process.argv[2] ?? 2000);
const logitsFloats = Number(process.argv[3] ?? 512);

const workerSource = `
const { parentPort, workerData } = require('node:worker_threads');
const { flag, data, floats } = workerData;
const flags = new Int32Array(flag);
const shared = new Float32Array(data);
parentPort.on('message', (message) => {
  if (message.type === 'port') {
    const logits = new Float32Array(floats);
    logits[0] = message.ids[0];
    parentPort.postMessage({ logits }, [logits.buffer]);
  } else if (message.type === 'sab') {
    for (;;) {
      Atomics.wait(flags, 0, 0);
      if (Atomics.load(flags, 0) === 2) break;
      shared[0] = shared[1];
      Atomics.store(flags, 0, 0);
      Atomics.store(flags, 1, 1);
      Atomics.notify(flags, 1);
    }
  }
});
`;
const flag = new SharedArrayBuffer(8);
const data = new SharedArrayBuffer(logitsFloats * 4);
const worker = new Worker(workerSource, { eval: true, workerData: { flag, data, floats: logitsFloats } });
const flags = new Int32Array(flag);
const shared = new Float32Array(data);

/** Node 20 has Atomics.waitAsync; the project's TypeScript lib (ES2022) does not declare it. */
interface AtomicsWithWaitAsync {
  waitAsync(array: Int32Array, index: number, value: number): { async: boolean; value: Promise<string> | string };
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

async function portTrip(): Promise<number> {
  const started = performance.now();
  const reply = new Promise<void>((resolve) => worker.once('message', () => resolve()));
  const ids = new BigInt64Array(8);
  worker.postMessage({ type: 'port', ids: Array.from(ids, Number), mask: new BigInt64Array(64) });
  await reply;
  return performance.now() - started;
}

async function sabTrip(): Promise<number> {
  const started = performance.now();
  shared[1] = 1;
  Atomics.store(flags, 1, 0);
  Atomics.store(flags, 0, 1);
  Atomics.notify(flags, 0);
  const result = (Atomics as unknown as AtomicsWithWaitAsync).waitAsync(flags, 1, 0);
  if (result.async) await result.value;
  return performance.now() - started;
}

const port: number[] = [];
for (let i = 0; i < trips; i++) port.push(await portTrip());
worker.postMessage({ type: 'sab' });
await new Promise((resolve) => setTimeout(resolve, 50));
const sab: number[] = [];
for (let i = 0; i < trips; i++) sab.push(await sabTrip());
Atomics.store(flags, 0, 2);
Atomics.notify(flags, 0);
console.log(`${trips} round trips, ${logitsFloats} logits floats back`);
console.log(`  MessagePort + transfer: median ${(median(port) * 1000).toFixed(0)} µs`);
console.log(`  SharedArrayBuffer + Atomics.wait / waitAsync: median ${(median(sab) * 1000).toFixed(0)} µs`);
await worker.terminate();
