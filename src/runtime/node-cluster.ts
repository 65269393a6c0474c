/**
 * Data parallelism under Node (vLLM's --data-parallel-size): several engine processes,
 * each with its own copy of the model and its own batch, behind one listening port.
 *
 * One process decodes on one core: onnxruntime-node runs a model call synchronously on the
 * calling thread, and sampling, detokenizing and the sockets share that thread. At many
 * concurrent streams a second process puts the machine's other core to work (NOTES.md has
 * the measurements); a single stream gains nothing, and every process holds the model and
 * its KV cache, so memory grows with the count.
 *
 * node:cluster shares the listening socket: the primary accepts connections and hands them
 * to the workers in turn. Limits (running sequences, waiting queue) apply per process.
 */
import cluster, { type Worker } from 'node:cluster';

/** Sent by the primary to each worker on SIGINT/SIGTERM: finish in-flight requests and exit. */
export const SHUTDOWN_MESSAGE = 'edge-llm:shutdown';

/** True in a worker process started by `startEngineProcesses`. */
export function isEngineWorker(): boolean {
  return cluster.isWorker;
}

/**
 * In the primary: starts `count` worker processes (each re-runs the entry module and, as a
 * worker, serves), relays shutdown to them, and exits once they all have: with code 1 when
 * any of them did (it cut requests at its grace deadline). A worker that dies before the
 * others are told to stop takes the server down (exit code 1): a silently smaller server
 * would be worse than a failing one. `forceStopMs`: how long workers get to stop once
 * asked (longer than their own grace period).
 */
export function startEngineProcesses(count: number, forceStopMs: number): void {
  const workers: Worker[] = [];
  let stopping = false;
  let failed = false;
  for (let index = 0; index < count; index++) workers.push(cluster.fork({ ENGINE_PROCESS_INDEX: String(index) }));
  let running = workers.length;
  for (const worker of workers) {
    worker.on('exit', (code, signal) => {
      running -= 1;
      if (code !== 0) failed = true;
      if (!stopping) {
        failed = true;
        console.error(`Engine process ${worker.process.pid} exited (${signal ?? `code ${code}`}): stopping the server.`);
        stopAll();
      }
      if (running === 0) process.exit(failed ? 1 : 0);
    });
  }
  function stopAll(): void {
    stopping = true;
    for (const worker of workers) {
      if (worker.isConnected()) worker.send(SHUTDOWN_MESSAGE);
    }
    // A process still loading its model has not installed its shutdown handler yet and
    // would not hear the request: past the workers' own grace period, stop it the hard way.
    setTimeout(() => {
      for (const worker of workers) if (!worker.isDead()) worker.process.kill('SIGKILL');
    }, forceStopMs).unref();
  }
  const onSignal = (signal: string) => {
    if (stopping) {
      console.log(`${signal} again: stopping the engine processes now.`);
      for (const worker of workers) worker.process.kill('SIGKILL');
      process.exit(1);
    }
    console.log(`${signal} received: stopping ${count} engine processes...`);
    stopAll();
  };
  process.on('SIGINT', () => onSignal('SIGINT'));
  process.on('SIGTERM', () => onSignal('SIGTERM'));
}
