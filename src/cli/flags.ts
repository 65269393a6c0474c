/**
 * The flags of `edge-llm serve`, generated from the settings' schema (src/config): one flag
 * per setting, named as vLLM's `serve` flag where vLLM has one, plus the few options that
 * are not settings (--config, vLLM's --enable-lora / --enable-auto-tool-choice switches,
 * the Hub's --revision). Nothing here lists a setting by hand.
 */
import type { z } from 'zod';
import { SETTING_KEYS, ServerConfigSchema, settingSurface, type SettingKey } from '../config/server-config.js';
import { valueFromText, type SettingSurface } from '../config/setting-surface.js';
import { describeIssue, plainErrorMap } from '../common/zod-issues.js';

/** An option of the command line that is not a server setting. */
export interface PlainOption {
  /** Without "--". */
  flag: string;
  help: string;
  /** How --help names its value; absent: a switch. */
  valueName?: string;
  group: string;
}

export const CLI_GROUP = 'The command line';

/** Options of `serve` beside the settings. */
export const SERVE_OPTIONS: readonly PlainOption[] = [
  { flag: 'config', valueName: 'FILE', help: 'a JSON file of settings (default: ./config.json when present; env CONFIG)', group: CLI_GROUP },
  { flag: 'revision', valueName: 'REV', help: 'the branch, tag or commit of a Hugging Face model id (default: main)', group: CLI_GROUP },
  { flag: 'enable-lora', help: "accepted for vLLM's command lines: adapters are on when --lora-modules names some", group: CLI_GROUP },
  { flag: 'enable-auto-tool-choice', help: "vLLM's switch for tool_choice \"auto\": needs --tool-call-parser, which turns it on", group: CLI_GROUP },
  { flag: 'help', help: 'show this help and exit', group: CLI_GROUP },
  { flag: 'version', help: 'show the version and exit', group: CLI_GROUP },
];

/** A setting's flag as the parser knows it. */
export interface SettingFlag {
  key: SettingKey;
  surface: SettingSurface & { flag: string; env: readonly string[] };
}

export const SETTING_FLAGS: readonly SettingFlag[] = SETTING_KEYS.map((key) => ({ key, surface: settingSurface(key) }));

/** Every spelling the parser accepts, with its dashes, for "did you mean". */
export function allFlagSpellings(): string[] {
  const out: string[] = [];
  for (const { surface } of SETTING_FLAGS) {
    out.push(`--${surface.flag}`, ...(surface.aliases ?? []));
    if (surface.text === 'bool') out.push(`--no-${surface.flag}`);
    if (surface.negation) out.push(`--${surface.negation}`);
  }
  for (const option of SERVE_OPTIONS) out.push(`--${option.flag}`);
  out.push('-h', '-v');
  return out;
}

/** Levenshtein distance (small strings: flag names). */
function distance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      current[j] = Math.min(previous[j]! + 1, current[j - 1]! + 1, previous[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    previous = current;
  }
  return previous[b.length]!;
}

/** The accepted spelling nearest to `given` (a word it contains or is contained in counts as nearest). */
export function nearestFlag(given: string): string {
  const bare = given.replace(/=.*$/, '');
  let best = '--help';
  let bestScore = Number.POSITIVE_INFINITY;
  for (const candidate of allFlagSpellings()) {
    if (candidate.length < 3) continue;
    const contains = candidate.includes(bare.replace(/^-+/, '')) || bare.includes(candidate.replace(/^-+/, ''));
    const score = distance(bare, candidate) - (contains ? 0.5 : 0);
    if (score < bestScore) {
      best = candidate;
      bestScore = score;
    }
  }
  return best;
}

/**
 * Converts and checks one flag's words against its setting's schema, so a bad value stops
 * the command at once with the flag's name. Returns the setting's value.
 */
export function settingValueFromWords(flag: SettingFlag, words: readonly string[], spelling: string): unknown {
  const { surface } = flag;
  let value: unknown;
  if (surface.many) value = words.flatMap((word) => {
    const converted = valueFromText(surface.text, word);
    return Array.isArray(converted) ? converted : [converted];
  });
  else value = valueFromText(surface.text, words[0]!);
  if (value === undefined) return undefined;
  const schema = ServerConfigSchema.shape[flag.key] as z.ZodType;
  const result = schema.safeParse(value, { reportInput: true, error: plainErrorMap });
  if (!result.success) {
    throw new CliUsageError(describeIssue(result.error.issues[0]!, spelling).message);
  }
  return value;
}

/** A command line the CLI refuses (exit code 2, as argparse does). */
export class CliUsageError extends Error {}
