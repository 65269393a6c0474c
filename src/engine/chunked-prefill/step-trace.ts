/**
 * An optional record of what each lane pass did and when (bench/join-trace.ts reads it to
 * find which gaps make the streams' inter-token p99 while a long prompt arrives). Off unless
 * a sink is set; the scheduler's cost with no sink is one null check per event.
 */
export interface StepTraceEvent {
  /** performance.now() at the event's end. */
  at: number;
  /** What ran: a decode step, a prefill slice, rows joining/leaving the batch (admission), a whole prefill. */
  kind: 'step' | 'slice' | 'admit' | 'prefill';
  /** How long it took (ms). */
  ms: number;
  /** Rows in the batch after it (step, admit), or tokens fed (slice, prefill). */
  size: number;
  /** The batch's KV slots per row after it (0 when unknown). */
  slots?: number;
  /** The model call's own time (ms), where the decoder measures it (the model worker). */
  callMs?: number;
  /** The scheduler lane it ran on. */
  lane?: number;
}

let sink: ((event: StepTraceEvent) => void) | null = null;

/** Sets (or clears, with null) where trace events go. */
export function setStepTrace(next: ((event: StepTraceEvent) => void) | null): void {
  sink = next;
}

/** Whether a sink is listening (skip building events otherwise). */
export function tracingSteps(): boolean {
  return sink !== null;
}

export function traceStep(event: StepTraceEvent): void {
  sink?.(event);
}
