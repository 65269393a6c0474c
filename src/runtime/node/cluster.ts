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

/** IPC for /metrics across engine processes: any process's scrape covers all of them. */
const METRICS_REQUEST = 'edge-llm:metrics-request';
const METRICS_COLLECT = 'edge-llm:metrics-collect';
const METRICS_SNAPSHOT = 'edge-llm:metrics-snapshot';
const METRICS_PEERS = 'edge-llm:metrics-peers';
/** A peer that does not answer in this long (busy in a long step, stopping) is left out of the scrape. */
const METRICS_WAIT_MS = 1000;

interface MetricsMessage {
  type: string;
  id: string;
  snapshot?: unknown;
  snapshots?: unknown[];
}

function isMetricsMessage(message: unknown): message is MetricsMessage {
  return typeof message === 'object' && message !== null && typeof (message as MetricsMessage).type === 'string' && typeof (message as MetricsMessage).id === 'string';
}

/**
 * In an engine process: answers the primary's requests for this process's metrics with
 * `snapshot()`, and returns the function that fetches the other processes' snapshots.
 */
export function shareMetricsWithPeers(snapshot: () => unknown): () => Promise<unknown[]> {
  const pending = new Map<string, (snapshots: unknown[]) => void>();
  let next = 0;
  process.on('message', (message: unknown) => {
    if (!isMetricsMessage(message)) return;
    if (message.type === METRICS_COLLECT) process.send?.({ type: METRICS_SNAPSHOT, id: message.id, snapshot: snapshot() });
    if (message.type === METRICS_PEERS) {
      pending.get(message.id)?.(message.snapshots ?? []);
      pending.delete(message.id);
    }
  });
  return () =>
    new Promise((resolve) => {
      const id = `${process.pid}-${next++}`;
      const timer = setTimeout(() => {
        pending.delete(id);
        resolve([]);
      }, METRICS_WAIT_MS * 2);
      pending.set(id, (snapshots) => {
        clearTimeout(timer);
        resolve(snapshots);
      });
      process.send?.({ type: METRICS_REQUEST, id });
    });
}

/** In the primary: relays a worker's request for its peers' metrics and sends back what they answer. */
function relayMetrics(workers: readonly Worker[], requester: Worker, id: string): void {
  const peers = workers.filter((worker) => worker !== requester && worker.isConnected());
  const snapshots: unknown[] = [];
  let answered = false;
  const answer = () => {
    if (answered) return;
    answered = true;
    clearTimeout(timer);
    for (const peer of peers) peer.off('message', onSnapshot);
    if (requester.isConnected()) requester.send({ type: METRICS_PEERS, id, snapshots });
  };
  const onSnapshot = (message: unknown) => {
    if (!isMetricsMessage(message) || message.type !== METRICS_SNAPSHOT || message.id !== id) return;
    snapshots.push(message.snapshot);
    if (snapshots.length === peers.length) answer();
  };
  const timer = setTimeout(answer, METRICS_WAIT_MS);
  if (peers.length === 0) return answer();
  for (const peer of peers) {
    peer.on('message', onSnapshot);
    peer.send({ type: METRICS_COLLECT, id });
  }
}

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
    worker.on('message', (message: unknown) => {
      if (isMetricsMessage(message) && message.type === METRICS_REQUEST) relayMetrics(workers, worker, message.id);
    });
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
