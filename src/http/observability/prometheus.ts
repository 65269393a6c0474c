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

interface Metric {
  readonly name: string;
  render(constant: Labels): string[];
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

  render(constant: Labels): string[] {
    const lines = [`# HELP ${this.name} ${this.help}`, `# TYPE ${this.name} counter`];
    if (this.values.size === 0) lines.push(`${this.name}${labelText(constant)} 0`);
    for (const { labels, value } of this.values.values()) lines.push(`${this.name}${labelText({ ...constant, ...labels })} ${numberText(value)}`);
    return lines;
  }
}

/** A value read when the metrics are scraped. */
export class Gauge implements Metric {
  constructor(
    readonly name: string,
    private readonly help: string,
    private readonly read: () => number,
  ) {}

  render(constant: Labels): string[] {
    return [`# HELP ${this.name} ${this.help}`, `# TYPE ${this.name} gauge`, `${this.name}${labelText(constant)} ${numberText(this.read())}`];
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

  render(constant: Labels): string[] {
    const lines = [`# HELP ${this.name} ${this.help}`, `# TYPE ${this.name} histogram`];
    this.buckets.forEach((bound, i) => lines.push(`${this.name}_bucket${labelText({ ...constant, le: numberText(bound) })} ${this.counts[i]}`));
    lines.push(`${this.name}_bucket${labelText({ ...constant, le: '+Inf' })} ${this.count}`);
    lines.push(`${this.name}_sum${labelText(constant)} ${numberText(this.sum)}`);
    lines.push(`${this.name}_count${labelText(constant)} ${this.count}`);
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

  /** The whole exposition, newline-terminated. */
  render(): string {
    return `${this.metrics.flatMap((metric) => metric.render(this.constantLabels)).join('\n')}\n`;
  }
}

/** The content type Prometheus expects for the text format. */
export const PROMETHEUS_CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8';
