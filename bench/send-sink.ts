/**
 * The SMTP sink of bench/send.ts: a minimal, fast SMTP server on loopback that drains every
 * message and counts it. It runs in its own process (started by bench/send.ts with an IPC
 * channel) so that it never shares an event loop with the sender it measures.
 *
 * Messages are counted by key: the local part of the (single) envelope recipient up to its last
 * "-" (`ya-17@customer.example` → `ya`), so each phase of the benchmark sends to its own key and
 * the phases are counted apart. Per key: messages, distinct recipients, duplicates (a recipient
 * seen again), bytes, messages carrying a DKIM-Signature header, the monotonic time (µs,
 * CLOCK_MONOTONIC, the clock of process.hrtime in every process on the machine) at which each
 * message was complete (before the 250 reply), and the raw bytes of the first message.
 *
 * SINK_REPLY_DELAY_MS (default 0): every reply leaves that much later, a relay that far away (a
 * round trip of that length; loopback has no kernel delay to add here, netem is not built in).
 *
 * IPC requests from the parent: `{ id, type: 'stats', key, detail?: boolean }` answers
 * `{ id, stats }` (detail adds the recipients and the arrival times). The sink announces
 * `{ type: 'ready', port }` once it listens.
 *
 *   node --import tsx --import ./bench/orphan-guard.ts bench/send-sink.ts   (with an IPC channel)
 */
import type { AddressInfo, Socket } from 'node:net';
import { SMTPServer } from 'smtp-server';

interface KeyStats {
  count: number;
  recipients: Set<string>;
  duplicates: number;
  bytes: number;
  signed: number;
  /** Monotonic µs at which each message was complete, in arrival order. */
  times: number[];
  sample?: Buffer;
}

const stats = new Map<string, KeyStats>();
const monotonicUs = () => Number(process.hrtime.bigint() / 1000n);
const DKIM_HEADER = /^dkim-signature:/im;

function keyOf(recipient: string): string {
  const local = recipient.slice(0, recipient.lastIndexOf('@'));
  const dash = local.lastIndexOf('-');
  return dash > 0 ? local.slice(0, dash) : local;
}

function statsOf(key: string): KeyStats {
  let s = stats.get(key);
  if (!s) stats.set(key, (s = { count: 0, recipients: new Set(), duplicates: 0, bytes: 0, signed: 0, times: [] }));
  return s;
}

const server = new SMTPServer({
  authOptional: true,
  disabledCommands: ['STARTTLS', 'AUTH'],
  disableReverseLookup: true,
  logger: false,
  banner: 'bench sink',
  onData(stream, session, callback) {
    const recipient = (session.envelope.rcptTo[0]?.address ?? '').toLowerCase();
    const s = statsOf(keyOf(recipient));
    const keep = s.count === 0 && !s.sample;
    const chunks: Buffer[] = [];
    let bytes = 0;
    let head: Buffer | undefined;
    stream.on('data', (chunk: Buffer) => {
      bytes += chunk.length;
      head ??= chunk;
      if (keep) chunks.push(chunk);
    });
    stream.on('end', () => {
      s.times.push(monotonicUs());
      s.count++;
      if (s.recipients.has(recipient)) s.duplicates++;
      else s.recipients.add(recipient);
      s.bytes += bytes;
      if (head) {
        const text = head.subarray(0, 4096).toString('latin1');
        const end = text.indexOf('\r\n\r\n');
        if (DKIM_HEADER.test(end >= 0 ? text.slice(0, end) : text)) s.signed++;
      }
      if (keep) s.sample = Buffer.concat(chunks);
      callback();
    });
  },
});
const replyDelayMs = Number(process.env.SINK_REPLY_DELAY_MS ?? 0);
if (replyDelayMs > 0) {
  // Timers of one duration run in the order they were set: the replies keep theirs.
  server.server.on('connection', (socket: Socket) => {
    const write = socket.write.bind(socket) as (...args: unknown[]) => boolean;
    socket.write = ((...args: unknown[]) => {
      setTimeout(() => socket.writable && write(...args), replyDelayMs);
      return true;
    }) as typeof socket.write;
  });
}
// A sender that drops its connections (a pool closed at the end of a phase) is ordinary.
server.on('error', () => {});

process.on('message', (raw) => {
  const msg = raw as { id: number; type: string; key: string; detail?: boolean };
  if (msg.type !== 'stats') return;
  const s = stats.get(msg.key);
  process.send!({
    id: msg.id,
    stats: {
      count: s?.count ?? 0,
      distinct: s?.recipients.size ?? 0,
      duplicates: s?.duplicates ?? 0,
      bytes: s?.bytes ?? 0,
      signed: s?.signed ?? 0,
      firstUs: s?.times[0] ?? null,
      lastUs: s?.times.at(-1) ?? null,
      sample: s?.sample?.toString('base64') ?? null,
      ...(msg.detail ? { recipients: [...(s?.recipients ?? [])], times: s?.times ?? [] } : {}),
    },
  });
});

server.listen(0, '127.0.0.1', () => {
  const { port } = server.server.address() as AddressInfo;
  process.send!({ type: 'ready', port });
});

for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    server.close(() => process.exit(0));
    setTimeout(() => process.exit(0), 2_000).unref();
  });
}
