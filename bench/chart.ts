/**
 * An SVG line chart of aggregate tok/s against concurrent streams for the 135M-shaped model:
 * this project and llama.cpp (best configuration per point), fp32 / F32 and q4 / Q4_0.
 * Hand-written SVG, no dependency: a few polylines, axes and a legend.
 */
import type { SizeResults } from './size.js';

const WIDTH = 640;
const HEIGHT = 380;
const MARGIN = { left: 64, right: 190, top: 40, bottom: 52 };

function escape(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

export function throughputChart(results: SizeResults): string {
  const rows = results.rows.filter((row) => row.model.startsWith('135M'));
  const counts = [1, ...new Set(rows.flatMap((row) => Object.keys(row.ours.streams).map(Number)))].sort((a, b) => a - b);
  const series = rows.flatMap((row) => {
    const points = (f: typeof row.ours) => counts.map((c) => (c === 1 ? f.singleTokPerSec : f.streams[c]));
    const dtype = row.dtype === 'q4' ? 'q4' : 'fp32';
    return [
      { name: `this project, ${dtype}`, values: points(row.ours), color: dtype === 'q4' ? '#1f77b4' : '#6baed6', dash: '' },
      { name: `llama.cpp, ${dtype === 'q4' ? 'Q4_0' : 'F32'}`, values: points(row.peerBest), color: dtype === 'q4' ? '#d62728' : '#fc9272', dash: '6 4' },
    ];
  });
  const maxValue = Math.max(1, ...series.flatMap((s) => s.values.filter(Number.isFinite)));
  // A round grid step (1, 2 or 5 × 10^k) giving 4 to 10 lines.
  const magnitude = 10 ** Math.floor(Math.log10(maxValue));
  const step = [0.1, 0.2, 0.5, 1].map((f) => f * magnitude).find((s) => maxValue / s <= 10)!;
  const top = Math.ceil(maxValue / step) * step;
  const plotW = WIDTH - MARGIN.left - MARGIN.right;
  const plotH = HEIGHT - MARGIN.top - MARGIN.bottom;
  const x = (i: number) => MARGIN.left + (counts.length === 1 ? plotW / 2 : (i * plotW) / (counts.length - 1));
  const y = (v: number) => MARGIN.top + plotH - (v / top) * plotH;
  const parts: string[] = [];
  parts.push(`<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${HEIGHT}" viewBox="0 0 ${WIDTH} ${HEIGHT}" font-family="sans-serif" font-size="12">`);
  parts.push(`<rect width="100%" height="100%" fill="white"/>`);
  parts.push(`<text x="${MARGIN.left}" y="22" font-size="14" font-weight="bold">135M-shaped Llama: aggregate tok/s vs concurrent streams</text>`);
  for (let v = 0; v <= top + 1e-9; v += step) {
    parts.push(`<line x1="${MARGIN.left}" x2="${MARGIN.left + plotW}" y1="${y(v)}" y2="${y(v)}" stroke="#e5e5e5"/>`);
    parts.push(`<text x="${MARGIN.left - 8}" y="${y(v) + 4}" text-anchor="end">${v}</text>`);
  }
  counts.forEach((c, i) => parts.push(`<text x="${x(i)}" y="${MARGIN.top + plotH + 18}" text-anchor="middle">${c}</text>`));
  parts.push(`<text x="${MARGIN.left + plotW / 2}" y="${HEIGHT - 12}" text-anchor="middle">concurrent streams (1 = one request)</text>`);
  parts.push(`<text transform="translate(16 ${MARGIN.top + plotH / 2}) rotate(-90)" text-anchor="middle">tokens / s</text>`);
  parts.push(`<line x1="${MARGIN.left}" x2="${MARGIN.left}" y1="${MARGIN.top}" y2="${MARGIN.top + plotH}" stroke="#333"/>`);
  parts.push(`<line x1="${MARGIN.left}" x2="${MARGIN.left + plotW}" y1="${MARGIN.top + plotH}" y2="${MARGIN.top + plotH}" stroke="#333"/>`);
  series.forEach((s, index) => {
    const pts = s.values.map((v, i) => (Number.isFinite(v) ? `${x(i).toFixed(1)},${y(v).toFixed(1)}` : null)).filter((p) => p !== null);
    parts.push(`<polyline fill="none" stroke="${s.color}" stroke-width="2.5" ${s.dash ? `stroke-dasharray="${s.dash}"` : ''} points="${pts.join(' ')}"/>`);
    for (const p of pts) {
      const [px, py] = p!.split(',');
      parts.push(`<circle cx="${px}" cy="${py}" r="3.5" fill="${s.color}"/>`);
    }
    const ly = MARGIN.top + 10 + index * 20;
    const lx = MARGIN.left + plotW + 16;
    parts.push(`<line x1="${lx}" x2="${lx + 24}" y1="${ly}" y2="${ly}" stroke="${s.color}" stroke-width="2.5" ${s.dash ? `stroke-dasharray="${s.dash}"` : ''}/>`);
    parts.push(`<text x="${lx + 30}" y="${ly + 4}">${escape(s.name)}</text>`);
  });
  const load = results.loadAverage.before[0].toFixed(1);
  parts.push(`<text x="${MARGIN.left + plotW + 16}" y="${MARGIN.top + 10 + series.length * 20 + 10}" fill="#666" font-size="11">${results.rounds} rounds, median;</text>`);
  parts.push(`<text x="${MARGIN.left + plotW + 16}" y="${MARGIN.top + 10 + series.length * 20 + 24}" fill="#666" font-size="11">load average ${load}</text>`);
  parts.push('</svg>');
  return `${parts.join('\n')}\n`;
}
