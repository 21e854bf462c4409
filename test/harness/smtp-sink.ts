import { SMTPServer } from 'smtp-server';
import PostalMime, { type Email } from 'postal-mime';
import type { AddressInfo, Socket } from 'node:net';

export interface ReceivedMessage {
  /** Envelope recipients as the server saw them. */
  rcptTo: string[];
  mailFrom: string;
  raw: Buffer;
  parsed: Email;
}

/** The platform's id of a message it sent: its Message-ID is `<emailId@sender domain>`. */
export const emailIdOf = (m: ReceivedMessage): string => /^<([^@>]+)@/.exec(m.parsed.messageId ?? '')![1];

export interface SmtpSink {
  url: string;
  port: number;
  messages: ReceivedMessage[];
  /** Resolves with the first message (present or future) that satisfies `match`. */
  waitFor(match: (m: ReceivedMessage) => boolean, timeoutMs?: number): Promise<ReceivedMessage>;
  /** Resolves with the first message (present or future) to `address`; a timeout names it. */
  waitForMailTo(address: string, timeoutMs?: number): Promise<ReceivedMessage>;
  /** Next answers to RCPT TO are 5xx (hard bounce) for these addresses. */
  rejectRecipients: Set<string>;
  /** Next answers to RCPT TO are 4xx ("mailbox full": a soft bounce) for these addresses. */
  deferRecipients: Set<string>;
  /** How many 4xx answers each address got so far. */
  deferrals: Map<string, number>;
  /** The whole reply (`554 5.7.1 …`) to RCPT TO these addresses. */
  refuseRecipients: Map<string, string>;
  /** The whole reply (`552 5.3.4 …`) to the end of a message to these addresses; it is not kept. */
  refuseMessages: Map<string, string>;
  /** The whole reply to MAIL FROM an envelope sender (a Return-Path) at these domains. */
  refuseSenders: Map<string, string>;
  /** Logins are refused (535) while set; connections already logged in go on (dropConnections). */
  refuseLogins: boolean;
  /** Closes every connection not in the middle of a message, as a relay restarting does. */
  dropConnections(): void;
  /** The most connections open at once so far. */
  peakConnections: number;
  /**
   * For these addresses the server takes the whole message (it is in `messages`) and holds its
   * answer until the client is gone: a client that dies now has handed the message over.
   */
  holdAnswers: Set<string>;
  /** Gives the answer (250) held for the message to `address` now, and holds no more for it. */
  answerHeld(address: string): void;
  /**
   * An outage: stop listening, answer 421 to new transactions, let transactions already in DATA
   * finish (a message is either taken whole or not at all), then drop every connection.
   */
  stop(): Promise<void>;
  /** Back on the same port. */
  start(): Promise<void>;
  close(): Promise<void>;
}

/** A real SMTP server on loopback that keeps every message it accepts. */
export async function startSmtpSink(): Promise<SmtpSink> {
  const messages: ReceivedMessage[] = [];
  const waiters: { match: (m: ReceivedMessage) => boolean; resolve: (m: ReceivedMessage) => void }[] = [];
  /** The first message (present or future) `match` takes; rejects after `timeoutMs` with `missing` and what did arrive. */
  const firstMessage = (match: (m: ReceivedMessage) => boolean, timeoutMs: number, missing: string): Promise<ReceivedMessage> => {
    const found = messages.find(match);
    if (found) return Promise.resolve(found);
    return new Promise((resolve, reject) => {
      const waiter = { match, resolve };
      waiters.push(waiter);
      setTimeout(() => {
        const i = waiters.indexOf(waiter);
        if (i < 0) return;
        waiters.splice(i, 1);
        const recipients = [...new Set(messages.flatMap((m) => m.rcptTo))];
        const shown = recipients.slice(-5).join(', ') + (recipients.length > 5 ? ` and ${recipients.length - 5} more` : '');
        reject(new Error(`${missing} within ${timeoutMs} ms (${messages.length} received${shown ? `, to ${shown}` : ''})`));
      }, timeoutMs).unref();
    });
  };
  const rejectRecipients = new Set<string>();
  const deferRecipients = new Set<string>();
  const deferrals = new Map<string, number>();
  const holdAnswers = new Set<string>();
  /** The held answers, by recipient: each answers once, whether given or its client is gone. */
  const heldAnswers = new Map<string, () => void>();
  const refuseRecipients = new Map<string, string>();
  const refuseMessages = new Map<string, string>();
  const refuseSenders = new Map<string, string>();
  /** smtp-server writes the code, then the error's message. */
  const reply = (line: string) => Object.assign(new Error(line.slice(4)), { responseCode: Number(line.slice(0, 3)) });
  let down = false;
  const sockets = new Set<Socket>();
  /** Sockets in the middle of DATA: closed once their message is taken. */
  const inData = new Set<Socket>();

  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS'],
    logger: false,
    size: 50 * 1024 * 1024,
    // A client given credentials logs in (over plain TCP, as to a relay on loopback), refused
    // while refuseLogins is set, as a relay refuses a password that was changed.
    allowInsecureAuth: true,
    onAuth(auth, _session, callback) {
      if (sink.refuseLogins) return callback(reply('535 5.7.8 Authentication credentials invalid'));
      callback(null, { user: auth.username });
    },
    onConnect(session, callback) {
      if (down) return callback(reply('421 service not available'));
      callback();
    },
    onMailFrom(address, _session, callback) {
      if (down) return callback(reply('421 shutting down'));
      const refusal = refuseSenders.get(address.address.toLowerCase().split('@')[1] ?? '');
      if (refusal) return callback(reply(refusal));
      callback();
    },
    onRcptTo(address, _session, callback) {
      const to = address.address.toLowerCase();
      const refusal = refuseRecipients.get(to);
      if (refusal) return callback(reply(refusal));
      if (rejectRecipients.has(to)) return callback(reply('550 5.1.1 mailbox unavailable'));
      if (deferRecipients.has(to)) {
        deferrals.set(to, (deferrals.get(to) ?? 0) + 1);
        return callback(reply('452 4.2.2 mailbox full, try again later'));
      }
      callback();
    },
    onData(stream, session, callback) {
      const socket = [...sockets].find((sock) => sock.remotePort === session.remotePort);
      if (socket) inData.add(socket);
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('end', async () => {
        const refusal = session.envelope.rcptTo.map((r) => refuseMessages.get(r.address.toLowerCase())).find((line) => line !== undefined);
        if (refusal) {
          if (socket) inData.delete(socket);
          callback(reply(refusal));
          return;
        }
        const raw = Buffer.concat(chunks);
        const message: ReceivedMessage = {
          raw,
          parsed: await PostalMime.parse(raw),
          rcptTo: session.envelope.rcptTo.map((r) => r.address.toLowerCase()),
          mailFrom: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
        };
        messages.push(message);
        for (const waiter of [...waiters]) {
          if (waiter.match(message)) {
            waiters.splice(waiters.indexOf(waiter), 1);
            waiter.resolve(message);
          }
        }
        const heldFor = message.rcptTo.find((to) => holdAnswers.has(to));
        if (heldFor) {
          let answered = false;
          const answer = () => {
            if (!answered) callback();
            answered = true;
          };
          heldAnswers.set(heldFor, answer);
          socket?.once('close', answer);
          return;
        }
        callback();
        if (socket) {
          inData.delete(socket);
          if (down) setImmediate(() => socket.destroy());
        }
      });
    },
  });
  // A client that dies mid-connection (a killed mailer) is an ordinary event for a server.
  server.on('error', () => {});
  server.server.on('connection', (socket: Socket) => {
    sockets.add(socket);
    sink.peakConnections = Math.max(sink.peakConnections, sockets.size);
    socket.once('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.server.address() as AddressInfo;

  const sink: SmtpSink = {
    url: `smtp://127.0.0.1:${port}`,
    port,
    messages,
    rejectRecipients,
    deferRecipients,
    deferrals,
    holdAnswers,
    answerHeld(address) {
      holdAnswers.delete(address);
      heldAnswers.get(address)?.();
      heldAnswers.delete(address);
    },
    refuseRecipients,
    refuseMessages,
    refuseSenders,
    refuseLogins: false,
    peakConnections: 0,
    waitFor(match, timeoutMs = 10_000) {
      return firstMessage(match, timeoutMs, 'no matching email');
    },
    waitForMailTo(address, timeoutMs = 10_000) {
      const to = address.toLowerCase();
      return firstMessage((m) => m.rcptTo.includes(to), timeoutMs, `no email to ${to}`);
    },
    dropConnections() {
      for (const socket of sockets) if (!inData.has(socket)) socket.destroy();
    },
    async stop() {
      down = true;
      await new Promise<void>((resolve) => server.server.close(() => resolve()));
      for (const socket of sockets) if (!inData.has(socket)) socket.destroy();
    },
    async start() {
      down = false;
      await new Promise<void>((resolve) => server.server.listen(port, '127.0.0.1', resolve));
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
  return sink;
}
