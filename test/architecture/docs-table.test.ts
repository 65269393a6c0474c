/**
 * docs/architecture.md's folder table against the tree: every folder of src/ has a row, on
 * the floor the import guard (floors.ts) puts it on, and every row names a folder that exists.
 */
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { FLOORS } from './floors.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

/** Folder -> floor number, from the table's rows "| 3 | `src/engine/` | ...". */
function documentedFloors(): Map<string, number> {
  const page = readFileSync(resolve(ROOT, 'docs/architecture.md'), 'utf8');
  const rows = new Map<string, number>();
  for (const match of page.matchAll(/^\| (\d+) \| `src\/([a-z-]+)\/` \|/gm)) rows.set(match[2]!, Number(match[1]));
  return rows;
}

describe("docs/architecture.md's folder table", () => {
  const rows = documentedFloors();
  const folders = readdirSync(resolve(ROOT, 'src'), { withFileTypes: true })
    .filter((entry) => entry.isDirectory())
    .map((entry) => entry.name);

  it('has a row for every folder of src/, on its floor in the import guard', () => {
    expect(rows.size).toBeGreaterThan(10);
    for (const folder of folders) {
      const index = FLOORS.findIndex((floor) => floor.includes(folder));
      expect(rows.get(folder), folder).toBe(FLOORS.length - 1 - index);
    }
  });

  it('names only folders that exist (or the command line, when it lands)', () => {
    for (const folder of rows.keys()) if (folder !== 'cli') expect(existsSync(resolve(ROOT, 'src', folder)), folder).toBe(true);
  });
});
