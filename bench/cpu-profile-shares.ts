/**
 * A V8 CPU profile (node --cpu-prof) summed by function: self time and inclusive time, as
 * shares of the busy (non-idle) time, for reading a server's per-token profile (issue #38).
 * V8 samples on wall time: on a loaded machine a preempted thread's ticks land in whatever
 * it was running (mostly the native model call), so read shares, not absolute times.
 *   node --cpu-prof --cpu-prof-interval 100 --cpu-prof-dir=DIR dist/node/server.js serve   (then SIGTERM)
 *   npx tsx bench/cpu-profile-shares.ts DIR/CPU.*.cpuprofile [top=40] [callers-of=functionName]
 */
import { readFileSync } from 'node:fs';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

const profile = JSON.parse(readFileSync(process.argv[2], 'utf8')) as Profile;
const top = Number(process.argv[3] ?? 40);
const callersOf = process.argv[4];
const byId = new Map(profile.nodes.map((node) => [node.id, node]));
const parent = new Map<number, number>();
for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id);
const name = (node: ProfileNode) =>
  `${node.callFrame.functionName || '(anonymous)'} ${node.callFrame.url.replace(/.*\//, '')}:${node.callFrame.lineNumber}`;

const timeById = new Map<number, number>();
profile.samples.forEach((id, i) => timeById.set(id, (timeById.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0)));
const self = new Map<string, number>();
const inclusive = new Map<string, number>();
let idle = 0;
let total = 0;
for (const [id, time] of timeById) {
  const node = byId.get(id)!;
  total += time;
  if (node.callFrame.functionName === '(idle)') idle += time;
  self.set(name(node), (self.get(name(node)) ?? 0) + time);
  const seen = new Set<string>();
  for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
    const key = name(byId.get(at)!);
    if (seen.has(key)) continue;
    seen.add(key);
    inclusive.set(key, (inclusive.get(key) ?? 0) + time);
  }
}
const busy = total - idle;
const line = (key: string, time: number) => `${((100 * time) / busy).toFixed(1).padStart(6)}% ${(time / 1000).toFixed(0).padStart(7)} ms  ${key}`;
console.log(`busy ${(busy / 1000).toFixed(0)} ms (idle ${(idle / 1000).toFixed(0)} ms)\n-- self`);
for (const [key, time] of [...self].filter(([key]) => !key.startsWith('(idle)')).sort((a, b) => b[1] - a[1]).slice(0, top)) console.log(line(key, time));
console.log('-- inclusive');
for (const [key, time] of [...inclusive].filter(([key]) => !key.startsWith('(')).sort((a, b) => b[1] - a[1]).slice(0, top)) console.log(line(key, time));
if (callersOf !== undefined) {
  console.log(`-- call paths of ${callersOf}`);
  const paths = new Map<string, number>();
  for (const [id, time] of timeById) {
    if (byId.get(id)!.callFrame.functionName !== callersOf) continue;
    const chain: string[] = [];
    for (let at = parent.get(id); at !== undefined && chain.length < 7; at = parent.get(at)) chain.push(name(byId.get(at)!));
    paths.set(chain.join(' < '), (paths.get(chain.join(' < ')) ?? 0) + time);
  }
  for (const [path, time] of [...paths].sort((a, b) => b[1] - a[1]).slice(0, 8)) console.log(line(path, time));
}
