// Background work that must not slow the requests (event webhook deliveries) waits here while
// the event loop is saturated. Measured as event-loop utilisation over the last tenth of a second:
// above the threshold the process has no time to spare, and the work waits for a while (at most
// `maxWaitMs`, so it never starves: under a load that never lets up it still moves, slowly).
import { performance, type EventLoopUtilization } from 'node:perf_hooks';

const SAMPLE_MS = 100;
const BUSY = 0.85;

let last: EventLoopUtilization | undefined;
let utilisation = 0;
let sampler: NodeJS.Timeout | undefined;

function sample(): void {
  const now = performance.eventLoopUtilization();
  utilisation = last ? performance.eventLoopUtilization(now, last).utilization : 0;
  last = now;
}

/** The event loop's utilisation over the last sample (0 to 1). */
export function loopUtilisation(): number {
  sampler ??= setInterval(sample, SAMPLE_MS).unref();
  return utilisation;
}

/** Resolves when the event loop has time to spare, or after `maxWaitMs`. */
export async function spareCapacity(maxWaitMs = 5_000): Promise<void> {
  const until = Date.now() + maxWaitMs;
  while (loopUtilisation() > BUSY && Date.now() < until) {
    await new Promise((resolve) => setTimeout(resolve, SAMPLE_MS).unref());
  }
}
