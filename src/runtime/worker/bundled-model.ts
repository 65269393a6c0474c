/**
 * A Worker serves the model its build bundled, named by a var (MODEL_GGUF, EMBEDDING_MODEL):
 * the same var naming another file or folder at run time (e.g. `--var` after the build)
 * would serve the wrong model, so it is refused with what to do.
 */
import type { WorkerEnv } from './env.js';

/** A path's last part, trailing slashes ignored (a folder's name as a file's). */
const baseName = (path: string) => path.split(/[/\\]+/).filter((part) => part !== '').pop() ?? path;

export function refuseAnotherBundle(env: WorkerEnv, variable: 'MODEL_GGUF' | 'EMBEDDING_MODEL', bundled: string, what: 'file' | 'folder', wranglerEnv: string): void {
  const value = env[variable];
  const named = typeof value === 'string' ? value.trim() : '';
  if (named !== '' && baseName(named) !== bundled) {
    throw new Error(
      `${variable} names ${named}, but this Worker was built with ${bundled}: the build bundles the ${what} ${variable} named when it ran ` +
        `(the build's environment, else wrangler.toml's [env.${wranglerEnv}.vars]); build again with the same setting.`,
    );
  }
}
