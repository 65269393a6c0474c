/**
 * The adapters a server knows by name (vLLM's LoRA requests by lora_name): loaded at
 * startup from `loraModules`, and at run time by /v1/load_lora_adapter when allowed.
 * Loading reads the folder through the runtime's reader, parses and checks it against the
 * base graph (peft-adapter.ts); an adapter is usable as soon as `load` resolves.
 */
import type { LoraGraphLayout } from './lora-graph.js';
import { AdapterError, parsePeftAdapter, type AdapterFiles, type LoraAdapter } from './peft-adapter.js';
import { adapterFileLimits, adapterNameProblem, MAX_LORA_PATH_CHARS, type AdapterFileLimits } from './adapter-limits.js';

/**
 * Reads an adapter folder (a path on disk, or a URL where the runtime fetches); a file past
 * its limit is refused before it is read whole.
 */
export type AdapterReader = (path: string, limits?: AdapterFileLimits) => Promise<AdapterFiles>;

/**
 * A run-time load the reader refused (outside the LoRA root, a symlink out, missing or
 * unreadable files, a config that is not JSON): the client gets one message for all of
 * them, so the endpoint tells nothing about which server paths exist or what they hold.
 */
export class AdapterPathRefused extends Error {
  constructor() {
    super('the path does not name a readable adapter folder inside the server\'s LoRA root (loraRoot)');
    this.name = 'AdapterPathRefused';
  }
}

export interface LoraModuleSetting {
  name: string;
  path: string;
}

export class LoraRegistry {
  private readonly adapters = new Map<string, LoraAdapter>();

  constructor(
    readonly layout: LoraGraphLayout,
    private readonly numLayers: number,
    readonly maxRank: number,
    private readonly reader: AdapterReader,
    /** Names that cannot be adapters (the served model's). */
    private readonly reserved: ReadonlySet<string>,
    /** Adapters held at once (maxCpuLoras). */
    private readonly maxAdapters: number = Infinity,
  ) {}

  private checkRoom(name: string): void {
    if (this.adapters.has(name)) throw new AdapterError(`The lora adapter '${name}' has already been loaded.`);
    if (this.adapters.size >= this.maxAdapters) {
      throw new AdapterError(`The server holds at most ${this.maxAdapters} LoRA adapters (maxCpuLoras); unload one before loading '${name}'.`);
    }
  }

  /** `reader`: where this load reads from (run-time loads: the reader confined to loraRoot). */
  async load(name: string, path: string, reader: AdapterReader = this.reader): Promise<LoraAdapter> {
    const nameProblem = adapterNameProblem(name);
    if (nameProblem !== null) throw new AdapterError(`LoRA adapter "${name.slice(0, 64)}${name.length > 64 ? '…' : ''}" cannot be loaded: ${nameProblem}.`);
    if (path.length > MAX_LORA_PATH_CHARS) throw new AdapterError(`LoRA adapter "${name}" cannot be loaded: its path has ${path.length} characters, more than ${MAX_LORA_PATH_CHARS}.`);
    if (this.reserved.has(name) || name === 'None') throw new AdapterError(`"${name}" cannot name a LoRA adapter: it is the base model's name.`);
    this.checkRoom(name);
    let files: AdapterFiles;
    try {
      files = await reader(path, adapterFileLimits(this.layout, this.maxRank));
    } catch (error) {
      if (error instanceof AdapterPathRefused) throw new AdapterError(`LoRA adapter "${name}" cannot be loaded: ${error.message}.`);
      throw new AdapterError(`LoRA adapter "${name}" cannot be loaded from ${path}: ${(error as Error).message}`);
    }
    // Checked again: another load may have finished meanwhile.
    this.checkRoom(name);
    const adapter = parsePeftAdapter(files, { name, path, layout: this.layout, numLayers: this.numLayers, maxRank: this.maxRank });
    this.adapters.set(name, adapter);
    return adapter;
  }

  /** Forgets an adapter; requests already running with it finish with it. */
  unload(name: string): LoraAdapter | undefined {
    const adapter = this.adapters.get(name);
    this.adapters.delete(name);
    return adapter;
  }

  get(name: string): LoraAdapter | undefined {
    return this.adapters.get(name);
  }

  list(): LoraAdapter[] {
    return [...this.adapters.values()];
  }
}
