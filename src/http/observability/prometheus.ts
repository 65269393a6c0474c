/**
 * Metrics in Prometheus's text exposition format (version 0.0.4), with no dependency and
 * no runtime API beyond plain JavaScript, so the same registry serves under Node, in a
 * workerd isolate and in a page. Every series carries the registry's constant labels
 * (vLLM's `model_name`).
 */

export type Labels = Readonly<Record<string, string>>;

function escapeLabelValue(value: string): string {
  return value.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/"/g, '\\"');
}

function labelText(labels: Labels): string {
  const entries = Object.entries(labels);
  if (entries.length === 0) return '';
  return `{${entries.map(([name, value]) => `${name}="${escapeLabelValue(value)}"`).join(',')}}`;
}

function numberText(value: number): string {
  if (Number.isNaN(value)) return 'NaN';
  if (value === Infinity) return '+Inf';
  if (value === -Infinity) return '-Inf';
  return String(value);
}

/** A metric's state as plain JSON, to add another process's counts into a scrape. */
export type MetricSnapshot =
  | { kind: 'counter'; values: Array<[Labels, number]> }
  | { kind: 'gauge'; value: number }
  | { kind: 'histogram'; counts: number[]; sum: number; count: number };

export type RegistrySnapshot = Record<string, MetricSnapshot>;

export interface Metric {
  readonly name: string;
  snapshot(): MetricSnapshot;
  /** The exposition lines, with `others` (the same metric in other processes) added in. */
  render(constant: Labels, others: readonly MetricSnapshot[]): string[];
}

/** A monotonically increasing count, per combination of its labels. */
export class Counter implements Metric {
  private readonly values = new Map<string, { labels: Labels; value: number }>();

  constructor(
    readonly name: string,
    private readonly help: string,
  ) {}

  inc(labels: Labels = {}, by = 1): void {
    const key = JSON.stringify(labels);
    const entry = this.values.get(key);
    if (entry === undefined) this.values.set(key, { labels, value: by });
    else entry.value += by;
  }

  snapshot(): MetricSnapshot {
    return { kind: 'counter', values: [...this.values.values()].map(({ labels, value }) => [labels, value]) };
  }

  render(constant: Labels, others: readonly MetricSnapshot[] = []): string[] {
    const merged = new Map<string, { labels: Labels; value: number }>();
    const add = (labels: Labels, value: number) => {
      const key = JSON.stringify(labels);
      const entry = merged.get(key);
      if (entry === undefined) merged.set(key, { labels, value });
      else entry.value += value;
    };
    for (const { labels, value } of this.values.values()) add(labels, value);
    for (const other of others) if (other.kind === 'counter') for (const [labels, value] of other.values) add(labels, value);
    const lines = [`# HELP ${this.name} ${this.help}`, `# TYPE ${this.name} counter`];
    if (merged.size === 0) lines.push(`${this.name}${labelText(constant)} 0`);
    for (const { labels, value } of merged.values()) lines.push(`${this.name}${labelText({ ...constant, ...labels })} ${numberText(value)}`);
    return lines;
  }
}

/** A count kept elsewhere (the engine's), read when the metrics are scraped; it only grows. */
export class ReadCounter implements Metric {
  constructor(
    readonly name: string,
    private readonly help: string,
    private readonly read: () => number,
  ) {}

  snapshot(): MetricSnapshot {
    return { kind: 'counter', values: [[{}, this.read()]] };
  }

  render(constant: Labels, others: readonly MetricSnapshot[] = []): string[] {
    let value = this.read();
    for (const other of others) if (other.kind === 'counter') for (const [, each] of other.values) value += each;
    return [`# HELP ${this.name} ${this.help}`, `# TYPE ${this.name} counter`, `${this.name}${labelText(constant)} ${numberText(value)}`];
  }
}

/** A value read when the metrics are scraped. */
export class Gauge implements Metric {
  constructor(
    readonly name: string,
    private readonly help: string,
    private readonly read: () => number,
    /** How other processes' values combine with this one's: summed (requests running), or averaged (a usage share). */
    private readonly combine: 'sum' | 'mean' = 'sum',
  ) {}

  snapshot(): MetricSnapshot {
    return { kind: 'gauge', value: this.read() };
  }

  render(constant: Labels, others: readonly MetricSnapshot[] = []): string[] {
    let value = this.read();
    let processes = 1;
    for (const other of others) {
      if (other.kind !== 'gauge') continue;
      value += other.value;
      processes += 1;
    }
    if (this.combine === 'mean') value /= processes;
    return [`# HELP ${this.name} ${this.help}`, `# TYPE ${this.name} gauge`, `${this.name}${labelText(constant)} ${numberText(value)}`];
  }
}

/** Cumulative buckets (`le`), sum and count, as Prometheus histograms are exposed. */
export class Histogram implements Metric {
  private readonly counts: number[];
  private sum = 0;
  private count = 0;

  constructor(
    readonly name: string,
    private readonly help: string,
    private readonly buckets: readonly number[],
  ) {
    this.counts = new Array<number>(buckets.length).fill(0);
  }

  observe(value: number): void {
    if (!Number.isFinite(value)) return;
    for (let i = 0; i < this.buckets.length; i++) if (value <= this.buckets[i]!) this.counts[i]! += 1;
    this.sum += value;
    this.count += 1;
  }

  snapshot(): MetricSnapshot {
    return { kind: 'histogram', counts: [...this.counts], sum: this.sum, count: this.count };
  }

  render(constant: Labels, others: readonly MetricSnapshot[] = []): string[] {
    const counts = [...this.counts];
    let { sum, count } = this;
    for (const other of others) {
      if (other.kind !== 'histogram' || other.counts.length !== counts.length) continue;
      other.counts.forEach((value, i) => (counts[i]! += value));
      sum += other.sum;
      count += other.count;
    }
    const lines = [`# HELP ${this.name} ${this.help}`, `# TYPE ${this.name} histogram`];
    this.buckets.forEach((bound, i) => lines.push(`${this.name}_bucket${labelText({ ...constant, le: numberText(bound) })} ${counts[i]}`));
    lines.push(`${this.name}_bucket${labelText({ ...constant, le: '+Inf' })} ${count}`);
    lines.push(`${this.name}_sum${labelText(constant)} ${numberText(sum)}`);
    lines.push(`${this.name}_count${labelText(constant)} ${count}`);
    return lines;
  }
}

/** Histograms per combination of labels (one series family, one HELP/TYPE). Per process: not merged across peers. */
export class HistogramVec implements Metric {
  private readonly series = new Map<string, { labels: Labels; counts: number[]; sum: number; count: number }>();

  constructor(
    readonly name: string,
    private readonly help: string,
    private readonly buckets: readonly number[],
  ) {}

  observe(labels: Labels, value: number): void {
    if (!Number.isFinite(value)) return;
    const key = JSON.stringify(labels);
    let entry = this.series.get(key);
    if (entry === undefined) {
      entry = { labels, counts: new Array<number>(this.buckets.length).fill(0), sum: 0, count: 0 };
      this.series.set(key, entry);
    }
    for (let i = 0; i < this.buckets.length; i++) if (value <= this.buckets[i]!) entry.counts[i]! += 1;
    entry.sum += value;
    entry.count += 1;
  }

  snapshot(): MetricSnapshot {
    return { kind: 'histogram', counts: [], sum: 0, count: 0 };
  }

  render(constant: Labels): string[] {
    const lines = [`# HELP ${this.name} ${this.help}`, `# TYPE ${this.name} histogram`];
    for (const { labels, counts, sum, count } of this.series.values()) {
      const all = { ...constant, ...labels };
      this.buckets.forEach((bound, i) => lines.push(`${this.name}_bucket${labelText({ ...all, le: numberText(bound) })} ${counts[i]}`));
      lines.push(`${this.name}_bucket${labelText({ ...all, le: '+Inf' })} ${count}`);
      lines.push(`${this.name}_sum${labelText(all)} ${numberText(sum)}`);
      lines.push(`${this.name}_count${labelText(all)} ${count}`);
    }
    return lines;
  }
}

export class Registry {
  private readonly metrics: Metric[] = [];

  constructor(private readonly constantLabels: Labels = {}) {}

  add<M extends Metric>(metric: M): M {
    this.metrics.push(metric);
    return metric;
  }

  snapshot(): RegistrySnapshot {
    return Object.fromEntries(this.metrics.map((metric) => [metric.name, metric.snapshot()]));
  }

  /** The whole exposition, newline-terminated, with other processes' snapshots added in. */
  render(others: readonly RegistrySnapshot[] = []): string {
    const lines = this.metrics.flatMap((metric) =>
      metric.render(
        this.constantLabels,
        others.map((other) => other[metric.name]).filter((snapshot): snapshot is MetricSnapshot => snapshot !== undefined),
      ),
    );
    return `${lines.join('\n')}\n`;
  }
}

/** The content type Prometheus expects for the text format. */
export const PROMETHEUS_CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8';
