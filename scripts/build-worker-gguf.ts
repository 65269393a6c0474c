/**
 * The GGUF Worker's build step (wrangler.toml's [env.gguf] build command, before `wrangler
 * dev --env gguf` / `wrangler deploy --env gguf`): reads the header of the .gguf that
 * MODEL_GGUF names (the build's environment, else wrangler.toml's [env.gguf.vars]; a path
 * relative to wrangler.toml), refuses it with the reason when it is past the Worker's
 * size or memory limits (src/runtime/worker/gguf-limits.ts), and copies it to
 * dist/worker-gguf/model.gguf with model.json (its name), which src/runtime/worker/gguf.ts
 * imports: the file goes up with the Worker as a Data module.
 *
 *   MODEL_GGUF=path/to/model.gguf npx tsx scripts/build-worker-gguf.ts
 */
import { existsSync } from 'node:fs';
import { copyFile, mkdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { basename, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { formatBytes } from '../src/engine/context-length.js';
import { ggufGraphOptionsFromSettings } from '../src/gguf/gguf-model.js';
import { openGgufModelAt } from '../src/gguf/node-gguf.js';
import { planWorkerGguf, workerGgufLimitsFrom, type WorkerGgufPlan } from '../src/runtime/worker/gguf-limits.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
export const WORKER_GGUF_DIR = `${ROOT}dist/worker-gguf`;
/** The wrangler environment whose vars name the file. */
const GGUF_ENV = 'gguf';

type Settings = Record<string, unknown>;

/**
 * MODEL_GGUF and the GGUF settings: from the build's environment when it names MODEL_GGUF,
 * else from wrangler.toml's [env.gguf.vars] (what the Worker itself reads).
 */
async function buildSettings(environment: NodeJS.ProcessEnv): Promise<Settings> {
  const keys = ['MODEL_GGUF', 'GGUF_WEIGHTS', 'GGUF_ACCURACY_LEVEL', 'ISOLATE_MEMORY_BYTES'];
  if (environment.MODEL_GGUF?.trim()) return Object.fromEntries(keys.filter((key) => environment[key]?.trim()).map((key) => [key, environment[key]!.trim()]));
  const { experimental_readRawConfig } = await import('wrangler');
  const { rawConfig } = experimental_readRawConfig({ config: join(ROOT, 'wrangler.toml') });
  return ((rawConfig.env as Record<string, { vars?: Settings }> | undefined)?.[GGUF_ENV]?.vars ?? {}) as Settings;
}

export interface WorkerGgufBuild {
  name: string;
  /** The file bundled, resolved. */
  source: string;
  plan: WorkerGgufPlan;
}

/**
 * Checks the named GGUF against the Worker's limits and puts it where worker-gguf.ts
 * imports it. `outDir` for tests; the default is what wrangler bundles.
 */
export async function buildWorkerGguf(options: { environment?: NodeJS.ProcessEnv; outDir?: string } = {}): Promise<WorkerGgufBuild> {
  const settings = await buildSettings(options.environment ?? process.env);
  const named = typeof settings.MODEL_GGUF === 'string' ? settings.MODEL_GGUF.trim() : '';
  if (!/\.gguf$/i.test(named)) {
    throw new Error(`MODEL_GGUF must name a .gguf file (in the build's environment or wrangler.toml's [env.${GGUF_ENV}.vars]), got ${JSON.stringify(settings.MODEL_GGUF ?? null)}`);
  }
  const source = resolve(ROOT, named);
  const name = basename(source);
  if (!existsSync(source)) throw new Error(`MODEL_GGUF: no file at ${source}`);
  const model = await openGgufModelAt(source);
  let plan: WorkerGgufPlan;
  try {
    plan = planWorkerGguf(name, model, ggufGraphOptionsFromSettings(settings), workerGgufLimitsFrom(settings));
  } catch (error) {
    throw new Error(`Cannot bundle the GGUF "${named}" into the Worker: ${(error as Error).message}`, { cause: error });
  }
  const outDir = options.outDir ?? WORKER_GGUF_DIR;
  await mkdir(outDir, { recursive: true });
  const { mtimeMs } = await stat(source);
  // No path: the JSON goes up with the Worker.
  const info = `${JSON.stringify({ name, bytes: plan.fileBytes, modified: new Date(mtimeMs).toISOString() }, null, 2)}\n`;
  // Unchanged: leave the files a running wrangler dev bundles alone.
  const previous = await readFile(join(outDir, 'model.json'), 'utf8').catch(() => null);
  if (previous !== info) {
    const partial = join(outDir, `model.gguf.partial-${process.pid}`);
    await copyFile(source, partial);
    await rename(partial, join(outDir, 'model.gguf'));
    await writeFile(join(outDir, 'model.json'), info);
  }
  return { name, source, plan };
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  buildWorkerGguf()
    .then(({ name, plan }) => {
      console.log(
        `Worker GGUF: ${name}, ${formatBytes(plan.fileBytes)}, ${(plan.weights / 1e6).toFixed(1)} M weights; ` +
          `about ${formatBytes(plan.peakBytes)} of the isolate's memory at the peak of the build, ${formatBytes(plan.residentBytes)} resident.`,
      );
    })
    .catch(async (error: unknown) => {
      await rm(join(WORKER_GGUF_DIR, 'model.json'), { force: true });
      console.error('Worker GGUF build failed:', error instanceof Error ? error.message : error);
      process.exit(1);
    });
}
