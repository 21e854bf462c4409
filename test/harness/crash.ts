import { eventually, type ApiResponse } from './client.ts';
import { sample } from './metrics.ts';
import type { Instance } from './instance.ts';

/** What became of each request of a load cut off by a crash. */
export interface LoadUnderCrash {
  /** Requests that got an answer (whatever the status), by index: the acknowledged ones are among them. */
  answered: Map<number, ApiResponse>;
  /** Requests sent that never got an answer: the connection died with the process. */
  cutOff: number[];
  /** How many requests had been sent when the kill came. */
  sent: number;
  /** How many of those were answered when the kill came (more may be read from the socket afterwards). */
  answeredAtKill: number;
  /** Date.now() just before the SIGKILL. */
  killedAt: number;
}

/**
 * Sends `count` requests, `inFlight` at a time, and SIGKILLs the platform (`instance.stop()`)
 * a few milliseconds after `killAfter` of them are answered, while others are on the wire. Sends
 * nothing more after the kill. The platform is left down: restart it to look at what survived.
 *
 * Answers come in groups (one group commit releases several), so a kill can find every request
 * answered already, with nothing cut off. Then the platform is started again and the load goes on
 * until a kill does cut requests off (at most `rounds` kills): the last kill is the one in the
 * middle of the load, and what the earlier rounds had answered stays acknowledged.
 */
export async function loadUntilKilled(
  instance: Instance,
  options: { count: number; inFlight: number; killAfter: number; rounds?: number },
  request: (i: number) => Promise<ApiResponse>,
): Promise<LoadUnderCrash> {
  const answered = new Map<number, ApiResponse>();
  let next = 0;
  let sent = 0;
  for (let round = 1; ; round++) {
    const cutOff: number[] = [];
    let killing: Promise<void> | undefined;
    let scheduled = false;
    let answeredAtKill = 0;
    let killedAt = 0;
    const goal = answered.size + options.killAfter;
    const worker = async () => {
      while (!killing && next < options.count) {
        const i = next++;
        sent++;
        try {
          answered.set(i, await request(i));
        } catch {
          cutOff.push(i);
          continue;
        }
        if (!scheduled && answered.size >= goal) {
          scheduled = true;
          // Off the answer's own tick, a little later: inside the next group's turn.
          setTimeout(() => {
            answeredAtKill = answered.size;
            killedAt = Date.now();
            killing = instance.stop(); // SIGKILL: the process dies with requests in flight
          }, 1 + Math.floor(Math.random() * 8));
        }
      }
    };
    await Promise.all(Array.from({ length: options.inFlight }, worker));
    if (!scheduled) throw new Error(`the load ended (${answered.size} answered of ${options.count}) before the kill`);
    while (!killing) await new Promise((resolve) => setTimeout(resolve, 5));
    await killing;
    if (cutOff.length > 0 || round >= (options.rounds ?? 5)) {
      return { answered, cutOff: cutOff.sort((a, b) => a - b), sent, answeredAtKill, killedAt };
    }
    await instance.restart();
  }
}

/**
 * Waits until the platform has nothing left to send (no email QUEUED or SENDING, per the API's
 * /metrics) and `count()` (e.g. emails received by the sink) has not moved for `quietMs`.
 */
export async function untilIdle(instance: Instance, count: () => number, quietMs: number, timeoutMs: number, what: string): Promise<void> {
  let last = -1;
  let since = Date.now();
  await eventually(
    async () => {
      const now = count();
      if (now !== last) [last, since] = [now, Date.now()];
      const res = await fetch(`${instance.url}/metrics`);
      const depth = sample(await res.text(), 'mailroom_outbound_queue_depth');
      if (depth !== 0) since = Date.now();
      return Date.now() - since >= quietMs ? true : undefined;
    },
    timeoutMs,
    what,
  );
}

/** How many messages the sink received for each address, among those whose subject passes `subject`. */
export function receivedBy(instance: Instance, subject: (s: string) => boolean): Map<string, number> {
  const counts = new Map<string, number>();
  for (const m of instance.smtp.messages) {
    if (!subject(m.parsed.subject ?? '')) continue;
    for (const to of m.rcptTo) counts.set(to, (counts.get(to) ?? 0) + 1);
  }
  return counts;
}

/** The addresses that did not receive exactly one message, with what they received. */
export const notOnce = (counts: Map<string, number>, addresses: string[]) =>
  addresses.filter((a) => counts.get(a) !== 1).map((a) => `${a}: ${counts.get(a) ?? 0}`);
