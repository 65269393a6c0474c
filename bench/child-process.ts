/** Stopping the servers the bench starts (llama-server, workerd). */
import type { ChildProcess } from 'node:child_process';

/** SIGTERM, resolved once the process has exited (at once when it already has). */
export function terminate(child: ChildProcess): Promise<void> {
  return new Promise<void>((resolve) => {
    if (child.exitCode !== null) return resolve();
    child.once('exit', () => resolve());
    child.kill('SIGTERM');
  });
}
