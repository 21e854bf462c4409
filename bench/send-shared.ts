/**
 * What bench/send.ts and its children (send-yardstick.ts, send-sink.ts) share.
 *
 * The email:  one small transactional HTML email with a <style> block (inlined
 * by juice), two template variables, and three web links (rewritten to tracked click URLs).
 * The platform phase sends it through `POST /v1/send`; the yardsticks send the same content.
 */
export const SENDER_NAME = 'Bench Shop';
/** The benchmark project's name: the campaign's footer names it, the yardstick's campaign message too. */
export const PROJECT_NAME = 'Mail benchmark';
export const SUBJECT = 'Your order {{order}} is on its way';
export const BODY = `<!doctype html>
<html><head><meta charset="utf-8"><style>
body { font-family: Helvetica, Arial, sans-serif; color: #222; background: #f6f6f6; }
.card { background: #fff; padding: 24px; border-radius: 6px; max-width: 560px; margin: 0 auto; }
h1 { font-size: 20px; margin: 0 0 12px; }
p { font-size: 15px; line-height: 1.5; margin: 0 0 12px; }
.button { display: inline-block; background: #1a73e8; color: #fff; padding: 10px 18px; border-radius: 4px; text-decoration: none; }
.muted { color: #888; font-size: 12px; }
table.items td { padding: 4px 8px; border-bottom: 1px solid #eee; }
</style></head>
<body><div class="card">
<h1>Hi {{name ?? there}},</h1>
<p>Good news: order <strong>{{order}}</strong> has left our warehouse and should reach you in 2&ndash;3 days.</p>
<table class="items"><tr><td>Blue mug</td><td>1</td><td>$12.00</td></tr><tr><td>Tea sampler</td><td>2</td><td>$18.00</td></tr></table>
<p><a class="button" href="https://shop.example/orders/{{order}}/track">Track your parcel</a></p>
<p>Questions? Read the <a href="https://shop.example/help/shipping">shipping help</a> or reply to this email.</p>
<p class="muted">Bench Shop, 1 Example Street. <a href="https://shop.example/account">Your account</a></p>
</div></body></html>`;

/**
 * A longer edition of BODY: `paragraphs` paragraphs of newsletter prose before the card's end, so
 * a campaign can be measured at another message size (bench:campaign `--paragraphs`; listmonk's
 * figures in issue #15 are at 10.8 KB, BODY makes 4.7 KB from the platform, relay-signed). Plain
 * text: no link or variable more, so what grows is what every sender encodes and writes, not what
 * the platform adds.
 */
export function bodyWith(paragraphs: number): string {
  const paragraph =
    '<p>This week in the shop: new autumn teas from small estates, a restock of the stoneware mugs that sold out in a day, and a guide to brewing green tea at the right temperature. Members get early access to the winter sampler, with free shipping on orders over forty dollars.</p>\n';
  return BODY.replace('</div></body>', `${paragraph.repeat(paragraphs)}</div></body>`);
}

/** The template data of the n-th email (the `data` of the request). */
export const dataOf = (n: number) => ({ name: `Customer ${n}`, order: `A-${100000 + n}` });

/** The recipient of the n-th email of a phase; the sink counts by `key` (see bench/send-sink.ts). */
export const recipientOf = (key: string, n: number) => `${key}-${n}@customer.example`;

/** The yardsticks, in the order they run; see bench/send-yardstick.ts and bench/README.md. */
export const VARIANTS = ['nagle', 'plain', 'nodelay', 'dkim', 'dkim-nodelay', 'dkim-key-nodelay', 'transport', 'compose'] as const;
export type Variant = (typeof VARIANTS)[number];
/** What a yardstick sends (YardstickConfig's `message`; bench:campaign `--yardstick-message`). */
export const YARDSTICK_MESSAGES = ['campaign', 'transactional'] as const;

/** What a yardstick child is told (env BENCH_YARDSTICK, JSON). */
export interface YardstickConfig {
  variant: Variant;
  smtpUrl: string;
  /** Sink keys of the measured and the warm-up messages. */
  key: string;
  warmupKey: string;
  count: number;
  warmup: number;
  inFlight: number;
  poolSize: number;
  domain: string;
  selector: string;
  privateKeyPem: string;
  publicUrl: string;
  /** bodyWith's paragraphs (bench:campaign `--paragraphs`); none when absent. */
  paragraphs?: number;
  /**
   * `campaign`: the message a campaign of PROJECT_NAME's sends (marketing: the project's footer,
   * its links and List-Unsubscribe), so the yardstick's message is the platform's size;
   * `transactional` (when absent): the template alone, as bench:send's platform sends it.
   */
  message?: (typeof YARDSTICK_MESSAGES)[number];
}

/** What a yardstick child reports over IPC before it exits. */
export interface YardstickResult {
  type: 'result';
  /** The measured window on the monotonic clock (µs): first send to last send resolved. */
  startUs: number;
  endUs: number;
  /** The child's CPU time (user + system) in the window. */
  cpuSeconds: number;
  errors: number;
  firstError?: string;
}

/** A sink's counts for one key (see bench/send-sink.ts). */
export interface SinkStats {
  count: number;
  distinct: number;
  duplicates: number;
  bytes: number;
  signed: number;
  firstUs: number | null;
  lastUs: number | null;
  /** The first message of the key, raw, base64. */
  sample: string | null;
  recipients?: string[];
  times?: number[];
}

/** A key's mean message size on the wire, in bytes. */
export const meanBytes = (stats: Pick<SinkStats, 'bytes' | 'count'>): number => stats.bytes / Math.max(1, stats.count);
