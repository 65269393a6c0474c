/**
 * How a user reaches each server setting besides the config file: its command-line flag
 * (vLLM's `serve` flag where vLLM has one), its environment variables, how a text value
 * becomes the setting, and its line in `edge-llm serve --help`. Each setting's schema in
 * server-config.ts carries its surface as zod metadata (`setting(schema, surface)`), so the
 * schema stays the one table: the CLI's flags, the environment names and --help are all
 * read from it, and docs/configuration.md is checked against it.
 */
import type { z } from 'zod';

/**
 * How one text value (a flag's word, an environment variable) becomes a setting's value.
 * A text that does not convert is passed through unchanged, so the schema's own validation
 * names it with the requirement.
 */
export type TextForm =
  /** As written (trimmed). */
  | 'string'
  /** A decimal integer. */
  | 'int'
  /** true or false (also 1 or 0). */
  | 'bool'
  /** Comma-separated items (a JSON array is read as one). */
  | 'list'
  /** "auto" or an integer. */
  | 'threads'
  /** A weight variant; vLLM's --dtype words (auto, float32, float16, half) are read as ours. */
  | 'dtype';

/** The sections of --help and of docs/configuration.md, in their order. */
export const SETTING_GROUPS = [
  'The model and where it listens',
  'Context and output limits',
  'Scheduling and batching',
  'Speculative decoding',
  'Processes and threads',
  'Chat templates and tool calling',
  'CORS',
  'Authentication, hosts, logs, connections',
  'Request bounds',
  'LoRA adapters',
] as const;

export interface SettingSurface {
  /** Help section (docs/configuration.md's section title). */
  group: (typeof SETTING_GROUPS)[number];
  /** One line for --help. */
  help: string;
  text: TextForm;
  /** The flag without "--": vLLM's name where it has one; unset, the key in kebab-case. */
  flag?: string;
  /** Other spellings of the flag (e.g. vLLM's short "-dp"), written in full with their dashes. */
  aliases?: readonly string[];
  /** A switch that sets a boolean setting false (vLLM's negative spelling), without "--". */
  negation?: string;
  /** The flag takes several words (vLLM's nargs="+") and may be repeated: the setting is their list. */
  many?: boolean;
  /** Environment variables that set it; the first one set wins. */
  env?: readonly string[];
  /** Never printed (the startup report says only that it is set). */
  secret?: boolean;
  /** How --help names the value (default: from the text form). */
  valueName?: string;
}

/** The schema of a setting, with its surface attached (read back with surfaceOf). */
export function setting<T extends z.ZodType>(schema: T, surface: SettingSurface): T {
  return schema.meta(surface as unknown as Record<string, unknown>) as T;
}

/** The surface a schema carries, or undefined. */
export function surfaceOf(schema: z.ZodType): SettingSurface | undefined {
  const meta = schema.meta() as Partial<SettingSurface> | undefined;
  return meta !== undefined && typeof meta.help === 'string' && typeof meta.text === 'string' ? (meta as SettingSurface) : undefined;
}

/** camelCase → kebab-case (maxPromptChars → max-prompt-chars). */
export function kebabCase(key: string): string {
  return key.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);
}

const VLLM_DTYPES: Record<string, string | undefined> = { auto: undefined, float32: 'fp32', float: 'fp32', float16: 'fp16', half: 'fp16' };

/** One text value as the setting's value (see TextForm); `undefined` means "unset". */
export function valueFromText(form: TextForm, raw: string): unknown {
  const text = raw.trim();
  switch (form) {
    case 'string':
      return text;
    case 'int':
      return /^-?\d+$/.test(text) ? Number(text) : text;
    case 'bool':
      if (/^(true|1)$/i.test(text)) return true;
      if (/^(false|0)$/i.test(text)) return false;
      return text;
    case 'threads':
      return /^\d+$/.test(text) ? Number(text) : text;
    case 'dtype':
      return Object.hasOwn(VLLM_DTYPES, text.toLowerCase()) ? VLLM_DTYPES[text.toLowerCase()] : text;
    case 'list': {
      if (text.startsWith('[')) {
        try {
          const parsed: unknown = JSON.parse(text);
          if (Array.isArray(parsed)) return parsed;
        } catch {
          // Not JSON: read as a comma-separated list.
        }
      }
      return text
        .split(',')
        .map((item) => item.trim())
        .filter((item) => item !== '');
    }
  }
}

/** How --help names a setting's value. */
export function valueNameOf(surface: SettingSurface): string {
  if (surface.valueName) return surface.valueName;
  switch (surface.text) {
    case 'int':
      return 'N';
    case 'bool':
      return '';
    case 'threads':
      return 'auto|N';
    case 'list':
      return 'A,B,...';
    default:
      return 'TEXT';
  }
}
