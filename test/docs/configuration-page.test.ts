/**
 * docs/configuration.md cannot drift from src/config: every setting of the server's schema
 * has a row, each row's env name is the variable that really sets it (asked of
 * configFromEnv, the code that reads them), each env name the code reads is on the page, and a
 * default written as code is the real default.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { configFromEnv, DEFAULT_SERVER_CONFIG, ServerConfigSchema } from '../../src/config/server-config.js';
import { REPO_ROOT } from './doc-blocks.js';

const page = readFileSync(join(REPO_ROOT, 'docs/configuration.md'), 'utf8');

interface Row {
  setting: string;
  env: string[];
  defaultCell: string;
}

/** The rows of the page's `| setting | env | default | ... |` tables. */
function settingRows(): Row[] {
  const rows: Row[] = [];
  let inTable = false;
  for (const line of page.split('\n')) {
    if (/^\| setting \| env \| default \|/.test(line)) inTable = true;
    else if (!line.startsWith('|')) inTable = false;
    else if (inTable && !line.startsWith('| ---')) {
      const cells = line.split('|').slice(1, -1).map((cell) => cell.trim());
      rows.push({
        setting: cells[0]!.replace(/`/g, ''),
        env: [...cells[1]!.matchAll(/`([A-Z0-9_]+)`/g)].map((m) => m[1]!),
        defaultCell: cells[2]!,
      });
    }
  }
  return rows;
}

const rows = settingRows();
const schemaKeys = Object.keys(ServerConfigSchema.shape);

/** Env names as string literals or object keys in a source file (the tables that map them). */
function envNamesIn(file: string, pattern: RegExp): string[] {
  return [...new Set([...readFileSync(join(REPO_ROOT, file), 'utf8').matchAll(pattern)].map((m) => m[1]!))];
}

describe('docs/configuration.md', () => {
  it('has one row per setting of src/config, and none that does not exist', () => {
    expect(rows.map((row) => row.setting).sort()).toEqual([...schemaKeys].sort());
  });

  it("names, for each setting, the env variables that set it, and only those", () => {
    for (const row of rows) {
      for (const name of row.env) {
        const read = configFromEnv({ [name]: '7' });
        expect(Object.keys(read), `${name} sets ${row.setting}`).toEqual([row.setting]);
      }
    }
    // Every variable the env table of server-config.ts maps (and the request bounds' names) is on a row.
    const documented = new Set(rows.flatMap((row) => row.env));
    const mapped = envNamesIn('src/config/server-config.ts', /^\s+([A-Z][A-Z0-9_]+): '/gm);
    expect(mapped.length).toBeGreaterThan(10);
    expect(mapped.filter((name) => !documented.has(name))).toEqual([]);
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
