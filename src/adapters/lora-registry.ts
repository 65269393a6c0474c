/**
 * The adapters a server knows by name (vLLM's LoRA requests by lora_name): loaded at
 * startup from `loraModules`, and at run time by /v1/load_lora_adapter when allowed.
 * Loading reads the folder through the runtime's reader, parses and checks it against the
 * base graph (peft-adapter.ts); an adapter is usable as soon as `load` resolves.
 */
import type { LoraGraphLayout } from './lora-graph.js';
import { AdapterError, parsePeftAdapter, type AdapterFiles, type LoraAdapter } from './peft-adapter.js';

/** Reads an adapter folder (a path on disk, or a URL where the runtime fetches). */
export type AdapterReader = (path: string) => Promise<AdapterFiles>;

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
  ) {}

  async load(name: string, path: string): Promise<LoraAdapter> {
    if (this.reserved.has(name) || name === 'None') throw new AdapterError(`"${name}" cannot name a LoRA adapter: it is the base model's name.`);
    if (this.adapters.has(name)) throw new AdapterError(`The lora adapter '${name}' has already been loaded.`);
    let files: AdapterFiles;
    try {
      files = await this.reader(path);
    } catch (error) {
      throw new AdapterError(`LoRA adapter "${name}" cannot be loaded from ${path}: ${(error as Error).message}`);
    }
    // Checked again: another load of the same name may have finished meanwhile.
    if (this.adapters.has(name)) throw new AdapterError(`The lora adapter '${name}' has already been loaded.`);
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
