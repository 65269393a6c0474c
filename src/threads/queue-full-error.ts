// Its own file, free of node:worker_threads: the HTTP error mapping imports it in every home (the page's bundle too).
/**
 * A job refused because the queue it would wait in is full: `status` 503 when the whole
 * queue is (the server is busy), 429 when the client's own share is (it is sending too much).
 */
export class ThreadQueueFullError extends Error {
  constructor(
    message: string,
    readonly status: 429 | 503,
    readonly retryAfterSeconds: number,
  ) {
    super(message);
    this.name = 'ThreadQueueFullError';
  }
}
