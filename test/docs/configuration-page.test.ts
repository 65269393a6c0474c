/**
 * docs/configuration.md cannot drift from src/config: every setting of the server's schema
 * has a row in its section, each row's flag is the one `edge-llm serve` parses, each row's
 * env name is the variable that really sets it (asked of configFromEnv, the code that reads
 * them), each env name the code reads is on the page, and a default written as code is the
 * real default.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseCommandLine, type ServeArgs } from '../../src/cli/args.js';
import { configFromEnv, DEFAULT_SERVER_CONFIG, SETTING_KEYS, ServerConfigSchema, settingSurface } from '../../src/config/server-config.js';
import { REPO_ROOT } from './doc-blocks.js';

const page = readFileSync(join(REPO_ROOT, 'docs/configuration.md'), 'utf8');

interface Row {
  setting: string;
  section: string;
  flags: string[];
  env: string[];
  defaultCell: string;
}

/** The rows of the page's `| setting | env | default | ... |` tables. */
function settingRows(): Row[] {
  const rows: Row[] = [];
  let inTable = false;
  let section = '';
  for (const line of page.split('\n')) {
    if (line.startsWith('## ')) section = line.slice(3).trim();
    if (/^\| setting \| flag \| env \| default \|/.test(line)) inTable = true;
    else if (!line.startsWith('|')) inTable = false;
    else if (inTable && !line.startsWith('| ---')) {
      const cells = line.split('|').slice(1, -1).map((cell) => cell.trim());
      rows.push({
        setting: cells[0]!.replace(/`/g, ''),
        section,
        flags: [...cells[1]!.matchAll(/`(-[^`]+)`/g)].map((m) => m[1]!),
        env: [...cells[2]!.matchAll(/`([A-Z0-9_]+)`/g)].map((m) => m[1]!),
        defaultCell: cells[3]!,
      });
    }
  }
  return rows;
}

const rows = settingRows();

/** A valid value for a setting's flag, as text: its default where it has one. */
function sampleValue(key: string): string {
  const samples: Record<string, string> = { dtype: 'q4', toolCallParser: 'hermes', reasoningParser: 'qwen3', maxSeqLen: '64', apiKey: 'k', loraRoot: '/tmp', allowedHosts: 'localhost', loraModules: 'a=/tmp/a', modelFile: 'onnx/model.onnx', servedModelName: 'm', poolerConfig: '{"pooling_type": "MEAN"}' };
  const fallback = (DEFAULT_SERVER_CONFIG as Record<string, unknown>)[key];
  return samples[key] ?? (Array.isArray(fallback) ? fallback.join(',') : String(fallback));
}
const schemaKeys = Object.keys(ServerConfigSchema.shape);

/** Env names as string literals or object keys in a source file (the tables that map them). */
function envNamesIn(file: string, pattern: RegExp): string[] {
  return [...new Set([...readFileSync(join(REPO_ROOT, file), 'utf8').matchAll(pattern)].map((m) => m[1]!))];
}

describe('docs/configuration.md', () => {
  it('has one row per setting of src/config, and none that does not exist', () => {
    expect(rows.map((row) => row.setting).sort()).toEqual([...schemaKeys].sort());
  });

  it('puts each setting in the section its --help group names, in the schema order', () => {
    for (const row of rows) expect(row.section, row.setting).toContain(settingSurface(row.setting as never).group.replace(/ \(.*$/, ''));
  });

  it('names, for each setting, the flags `edge-llm serve` parses into it', () => {
    for (const row of rows) {
      const surface = settingSurface(row.setting as never);
      expect(row.flags[0], `${row.setting}'s flag`).toBe(`--${surface.flag}`);
      for (const flag of row.flags) {
        const word = surface.text === 'bool' ? flag : `${flag}=${sampleValue(row.setting)}`;
        const parsed = parseCommandLine(['serve', word]) as ServeArgs;
        const key = row.setting === 'modelDir' ? (parsed.model !== undefined ? 'modelDir' : undefined) : Object.keys(parsed.settings)[0];
        expect(key, `${flag} sets ${row.setting}`).toBe(row.setting);
      }
    }
    // Every setting has a flag (the rows are every setting: the test above).
    expect(SETTING_KEYS.every((key) => settingSurface(key).flag.length > 0)).toBe(true);
  });

  it("names, for each setting, the env variables that set it, and only those", () => {
    for (const row of rows) {
      for (const name of row.env) {
        const read = configFromEnv({ [name]: '7' });
        expect(Object.keys(read), `${name} sets ${row.setting}`).toEqual([row.setting]);
      }
    }
    // Every variable the settings' schema names (the request bounds' too) is on its setting's row.
    for (const key of SETTING_KEYS) expect(rows.find((row) => row.setting === key)!.env, `${key}'s env`).toEqual([...settingSurface(key).env]);
    const bounds = schemaKeys.filter((key) => Object.keys(configFromEnv({ [key.replace(/[A-Z]/g, (c) => `_${c}`).toUpperCase()]: '7' })).length > 0);
    for (const key of bounds) expect(rows.find((row) => row.setting === key)!.env.length, `${key}'s env`).toBeGreaterThan(0);
  });

  it('states the real default wherever it writes one as code', () => {
    let checked = 0;
    for (const row of rows) {
      const code = /^`([^`]+)`$/.exec(row.defaultCell)?.[1];
      if (code === undefined) continue;
      checked++;
      const actual = (DEFAULT_SERVER_CONFIG as Record<string, unknown>)[row.setting];
      expect(JSON.parse(code), `${row.setting}'s default`).toEqual(actual);
    }
    expect(checked).toBeGreaterThan(schemaKeys.length * 0.8);
  });

  it('lists every media variable the server reads', () => {
    const media = envNamesIn('src/media/config.ts', /\b((?:MEDIA|ALLOWED_MEDIA)_[A-Z0-9_]+)\b/g);
    expect(media.length).toBeGreaterThan(15);
    expect(media.filter((name) => !page.includes(`\`${name}\``))).toEqual([]);
  });

  it('lists every variable the Node and Worker entries and the gateway read', () => {
    const files = [
      'src/runtime/node/main.ts',
      'src/cli/main.ts',
      'src/runtime/node/hub/download.ts',
      'src/runtime/worker/env.ts',
      'src/runtime/worker/gateway.ts',
      'src/runtime/worker/limits.ts',
      'src/gateway/client-keys.ts',
      'src/gateway/upstreams.ts',
    ];
    const vars = files.flatMap((file) => envNamesIn(file, /\benv\.([A-Z][A-Z0-9_]+)\b/g));
    expect(vars.length).toBeGreaterThan(10);
    expect([...new Set(vars)].filter((name) => !page.includes(`\`${name}\``))).toEqual([]);
  });
});
