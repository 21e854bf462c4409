import { recordSystemEvents } from '../../actors/contact/system-events.ts';
import { systemEventsOf, type EmailResult } from '../../domain/mail/results.ts';
import type { Platform } from '../../runtime/platform.ts';

/**
 * Deliveries recorded for at most this many emails at once: a group's write is one insert of their
 * events, then one update per contact by id, all in flight together (system-events.ts).
 */
const GROUP_MAX = 100;

interface Waiting {
  result: EmailResult;
  resolve: () => void;
  reject: (err: unknown) => void;
}

/**
 * The mailer's deliveries (`email.sent` and `email.delivery` on the contact), written in groups:
 * while one group is written the next gathers, so under load a write carries many emails, and
 * alone an email waits for nothing (its group starts after the event-loop turn that brought it).
 * A turn of the contact per email was a quarter of a relay-signed email's CPU
 * (bench/results/campaign-profile.md, session 13). The events are the ones the results queue's
 * handler records for the same result (results.ts), with the same ids, so either records them once.
 */
export class DeliveryRecords {
  readonly #p: Platform;
  readonly #waiting: Waiting[] = [];
  #writing = false;

  constructor(p: Platform) {
    this.#p = p;
  }

  /** Resolves once the result's events are written (or its contact is found gone); rejects with its group's failure. */
  record(result: EmailResult): Promise<void> {
    return new Promise((resolve, reject) => {
      this.#waiting.push({ result, resolve, reject });
      if (!this.#writing) {
        this.#writing = true;
        setImmediate(() => void this.#write());
      }
    });
  }

  async #write(): Promise<void> {
    while (this.#waiting.length > 0) {
      const group = this.#waiting.splice(0, GROUP_MAX);
      try {
        await recordSystemEvents(this.#p, group.map(({ result }) => systemEventsOf(result)));
        for (const one of group) one.resolve();
      } catch (err) {
        for (const one of group) one.reject(err);
      }
    }
    this.#writing = false;
  }
}
