import { connect, type Socket } from 'node:net';
import { hostname } from 'node:os';

/**
 * A small SMTP client of our own for the mailer's hot path: a pool of connections to a plaintext
 * relay that offers PIPELINING (RFC 2920) and not STARTTLS, the high-volume setup of a local or
 * in-network MTA. A message is one round trip: its envelope and DATA go in one write with the end
 * of the message before it on the connection (RFC 2920 lets a group begin with a message's end),
 * then the message follows the 354. nodemailer's pool, which pipelines within a message only, takes
 * two, and spent 0.150 ms of CPU a message in its stream machinery where this spends 0.047–0.054
 * (10 KB messages into the bench sink, 16 connections; bench/results/campaign-profile.md, session
 * 11), about a tenth of a campaign email's CPU.
 *
 * It does no TLS and no authentication: a relay URL with credentials or options, or a relay that
 * offers STARTTLS or lacks PIPELINING, is nodemailer's (transport.ts decides, `smtpTransport`).
 *
 * Failures are errors shaped as nodemailer's (`responseCode`, `command`, `response`), which
 * smtp-answers.ts reads: a reply to MAIL FROM, RCPT TO or DATA (the command or the message), or
 * none at all (a connection lost, a timeout: an outage).
 */

/** A plaintext relay this client may serve: host and port, nothing else in its URL. */
export interface PlainRelay {
  host: string;
  port: number;
}

/** The relay of `url` when it is one for this client: `smtp://host[:port]` and nothing more. */
export function plainRelayOf(url: string): PlainRelay | undefined {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return undefined;
  }
  if (parsed.protocol !== 'smtp:' || parsed.username || parsed.password || parsed.search || parsed.hash) return undefined;
  if (parsed.pathname !== '' && parsed.pathname !== '/') return undefined;
  // nodemailer's default port for smtp: without `secure`.
  return { host: parsed.hostname.replace(/^\[(.*)\]$/, '$1'), port: parsed.port ? Number(parsed.port) : 587 };
}

/** The relay is not one for this client (found at its greeting): nodemailer takes over. */
export class NotPipelinable extends Error {}

export class SmtpReplyError extends Error {
  readonly response?: string;
  readonly responseCode?: number;
  readonly command: string;
  constructor(message: string, command: string, response?: string) {
    super(response ? `${message}: ${response}` : message);
    this.command = command;
    if (response) {
      this.response = response;
      const number = Number(/^\d{3}/.exec(response)?.[0]);
      if (number) this.responseCode = number;
    }
  }
}

export interface Envelope {
  from: string;
  to: string[];
}

/** Whether this client can carry the envelope: ASCII addresses (others need SMTPUTF8, which nodemailer handles). */
export const isAsciiEnvelope = ({ from, to }: Envelope) => /^[\x00-\x7f]*$/.test(from + to.join(''));

/** No traffic for this long in a transaction: the connection is given up (as the circuit breaker gives up a send). */
const REPLY_TIMEOUT_MS = 60_000;

/** The name we greet with: the machine's name when it is a domain, as nodemailer says it. */
const HELO_NAME = (() => {
  const name = hostname();
  if (!name.includes('.')) return '[127.0.0.1]';
  return /^\d{1,3}(\.\d{1,3}){3}$/.test(name) ? `[${name}]` : name.replace(/[\r\n]/g, '');
})();

/**
 * One SMTP session: its socket, the replies it waits for, and one transaction at a time, with the
 * one before it (its message ended) perhaps still waiting for its reply.
 */
class Session {
  readonly #socket: Socket;
  /** What came in after the last full line, the lines of a reply not finished yet, whole replies not taken yet. */
  #buffer = '';
  #lines: string[] = [];
  readonly #replies: string[] = [];
  readonly #waiting: { resolve(reply: string): void; reject(err: Error): void }[] = [];
  #failure: Error | undefined;
  busy = false;

  private constructor(socket: Socket) {
    this.#socket = socket;
    socket.setNoDelay(true);
    socket.setEncoding('utf8');
    // Socket inactivity: an idle session in the pool is left alone, a silent relay is given up.
    socket.setTimeout(REPLY_TIMEOUT_MS);
    socket.on('timeout', () => {
      if (this.busy || this.#waiting.length > 0) this.close(lost(`nothing from the relay in ${REPLY_TIMEOUT_MS / 1000} s`));
    });
    socket.on('data', (text: string) => this.#read(text));
    socket.on('error', (err) => this.#fail(lost(err.message)));
    socket.on('close', () => this.#fail(lost('the relay closed the connection')));
  }

  /** A session past its greeting and EHLO, on a relay that pipelines and offers no STARTTLS. */
  static async open(relay: PlainRelay): Promise<Session> {
    const socket = connect({ host: relay.host, port: relay.port });
    const session = new Session(socket);
    try {
      const greeting = await session.#reply();
      if (!greeting.startsWith('220')) throw new SmtpReplyError('The relay refused the connection', 'CONN', greeting);
      session.#socket.write(`EHLO ${HELO_NAME}\r\n`);
      const ehlo = await session.#reply();
      // A relay in trouble (4xx) is an outage; one that knows no EHLO (5xx) is nodemailer's, which says HELO.
      if (ehlo.startsWith('4')) throw new SmtpReplyError('The relay refused EHLO', 'EHLO', ehlo);
      if (!ehlo.startsWith('250')) throw new NotPipelinable(`EHLO refused: ${ehlo}`);
      const extensions = ehlo.split('\n').map((line) => line.slice(4).trim().toUpperCase());
      if (!extensions.some((line) => line === 'PIPELINING') || extensions.some((line) => line === 'STARTTLS')) {
        throw new NotPipelinable('the relay does not offer PIPELINING, or offers STARTTLS');
      }
      return session;
    } catch (err) {
      session.close();
      throw err;
    }
  }

  get usable(): boolean {
    return this.#failure === undefined;
  }

  /** Replies still awaited: a transaction released after its "." waits for its last one. */
  get awaiting(): boolean {
    return this.#waiting.length > 0;
  }

  /**
   * One transaction. `commit` runs once the whole message is with the kernel and before the
   * terminating "." is written (transport.ts says why); a throw from it leaves the message
   * unterminated, which the relay discards. `released` is called once the "." is written: the
   * session may carry the next transaction while this one waits for its reply (RFC 2920 lets
   * the next envelope follow the message in one group), and that envelope goes out in the same
   * write as the ".", so a message costs one round trip, not two.
   */
  async send(raw: Buffer, envelope: Envelope, commit: () => void, released: () => void = () => {}): Promise<string> {
    // Addresses are checked where they come in; a line end here would be a command of its own.
    if ([envelope.from, ...envelope.to].some((address) => /[\x00-\x1f\x7f<>]/.test(address))) throw new Error('Invalid envelope address');
    const replies = [this.#reply(), ...envelope.to.map(() => this.#reply()), this.#reply()];
    this.#socket.write(`MAIL FROM:<${envelope.from}>\r\n${envelope.to.map((to) => `RCPT TO:<${to}>\r\n`).join('')}DATA\r\n`);
    const [mail, ...rest] = await Promise.all(replies);
    const data = rest.pop()!;
    const refused = envelopeRefusal(mail, rest, data);
    if (refused) {
      // A DATA taken although nothing else was: an empty message ends it, and is not sent.
      if (data.startsWith('354')) await this.#command('.\r\n');
      const reset = await this.#command('RSET\r\n');
      if (!reset.startsWith('250')) this.close();
      throw refused;
    }
    await new Promise<void>((resolve, reject) => this.#socket.write(dotStuffed(raw), (err) => (err ? reject(lost(err.message)) : resolve())));
    const ended = this.#reply();
    try {
      commit();
    } catch (err) {
      ended.catch(() => undefined); // the session is gone with its reply
      this.close();
      throw err;
    }
    // Corked until the microtasks of this turn have run: a send waiting for the session takes it
    // in them (released) and its envelope joins the "." in one segment.
    this.#socket.cork();
    this.#socket.write('.\r\n');
    process.nextTick(() => this.#socket.uncork());
    released();
    const reply = await ended;
    if (!reply.startsWith('2')) throw new SmtpReplyError('Message failed', 'DATA', reply);
    return reply;
  }

  close(why = lost('the connection was closed')): void {
    this.#fail(why);
    this.#socket.destroy();
  }

  #command(line: string): Promise<string> {
    const reply = this.#reply();
    this.#socket.write(line);
    return reply;
  }

  #reply(): Promise<string> {
    if (this.#failure) return Promise.reject(this.#failure);
    return new Promise<string>((resolve, reject) => {
      this.#waiting.push({ resolve, reject });
      this.#deliver();
    });
  }

  #read(text: string): void {
    this.#buffer += text;
    for (let end = this.#buffer.indexOf('\n'); end !== -1; end = this.#buffer.indexOf('\n')) {
      const line = this.#buffer.slice(0, end).replace(/\r$/, '');
      this.#buffer = this.#buffer.slice(end + 1);
      this.#lines.push(line);
      // "250-…" continues the reply; "250 …" (or a bare "250") ends it.
      if (line.charAt(3) !== '-') {
        const reply = this.#lines.join('\n');
        this.#lines = [];
        this.#replies.push(reply);
      }
    }
    this.#deliver();
    // Every command's reply is waited for before the command is written: one nobody waits for
    // (a 421 before the relay hangs up) would be taken for the next command's, so the session ends.
    if (this.#replies.length > 0) this.close(lost(`the relay said, unasked: ${this.#replies[0]}`));
  }

  #deliver(): void {
    while (this.#replies.length > 0 && this.#waiting.length > 0) {
      this.#waiting.shift()!.resolve(this.#replies.shift()!);
    }
  }

  #fail(err: Error): void {
    this.#failure ??= err;
    for (const waiter of this.#waiting.splice(0)) waiter.reject(this.#failure);
  }
}

/** A failed envelope: the error for its first refused step (a 4xx recipient before a 5xx one, as nodemailer reports it). */
function envelopeRefusal(mail: string, rcpts: string[], data: string): SmtpReplyError | undefined {
  if (!mail.startsWith('2')) return new SmtpReplyError('Mail command failed', 'MAIL FROM', mail);
  if (!rcpts.some((reply) => reply.startsWith('2'))) {
    const reply = rcpts.find((r) => r.startsWith('4')) ?? rcpts[rcpts.length - 1];
    return new SmtpReplyError("Can't send mail - all recipients were rejected", 'RCPT TO', reply);
  }
  if (!data.startsWith('354')) return new SmtpReplyError('Data command failed', 'DATA', data);
  return undefined;
}

const lost = (why: string) => new Error(`Connection to the relay lost: ${why}`);

/**
 * The message as it goes after DATA: a line that starts with "." gets another in front (RFC 5321
 * §4.5.2), and it ends with a line end for the terminator to follow.
 */
export function dotStuffed(raw: Buffer): Buffer {
  const ended = raw.length >= 2 && raw[raw.length - 2] === 0x0d && raw[raw.length - 1] === 0x0a;
  // Where a line starts with ".": found in the bytes, not in a string made of them and back.
  const dots: number[] = raw[0] === 0x2e ? [0] : [];
  for (let at = raw.indexOf('\n.'); at !== -1; at = raw.indexOf('\n.', at + 1)) dots.push(at + 1);
  if (dots.length === 0) return ended ? raw : Buffer.concat([raw, CRLF]);
  const pieces: Buffer[] = [];
  let from = 0;
  for (const at of dots) {
    pieces.push(raw.subarray(from, at), DOT);
    from = at;
  }
  pieces.push(raw.subarray(from));
  if (!ended) pieces.push(CRLF);
  return Buffer.concat(pieces);
}

const CRLF = Buffer.from('\r\n');
const DOT = Buffer.from('.');

/**
 * Up to `connections` sessions, opened as sends need them; a send waits for a free one. A
 * session that failed is dropped, and the next send opens another.
 */
export class PipelinedPool {
  readonly #relay: PlainRelay;
  readonly #connections: number;
  readonly #sessions = new Set<Session>();
  #opening = 0;
  readonly #queue: { resolve(session: Session): void; reject(err: unknown): void }[] = [];
  #closed = false;
  /** Set once the relay proved not to be one for this client: every send is refused with it. */
  #unfit: NotPipelinable | undefined;

  constructor(relay: PlainRelay, connections: number) {
    this.#relay = relay;
    this.#connections = connections;
  }

  send(raw: Buffer, envelope: Envelope, commit: () => void): Promise<string> {
    return this.#send(raw, envelope, commit, true);
  }

  async #send(raw: Buffer, envelope: Envelope, commit: () => void, mayRetry: boolean): Promise<string> {
    const session = await this.#take();
    // The transaction before this one on the session may still wait for its reply: if the
    // connection is lost under it, this one, not begun (uncommitted), goes again on another.
    const behind = session.awaiting;
    let committed = false;
    let given = false;
    const give = () => {
      if (given) return;
      given = true;
      this.#give(session);
    };
    try {
      return await session.send(raw, envelope, () => {
        commit();
        committed = true;
      }, give);
    } catch (err) {
      if (!mayRetry || !behind || committed || session.usable) throw err;
      give();
      return this.#send(raw, envelope, commit, false);
    } finally {
      give();
    }
  }

  close(): void {
    this.#closed = true;
    for (const session of this.#sessions) session.close();
    this.#sessions.clear();
    for (const waiter of this.#queue.splice(0)) waiter.reject(lost('the mailer is closing'));
  }

  #take(): Promise<Session> {
    if (this.#unfit) return Promise.reject(this.#unfit);
    if (this.#closed) return Promise.reject(lost('the mailer is closing'));
    for (const session of this.#sessions) {
      if (session.busy) continue;
      if (!session.usable) {
        this.#sessions.delete(session); // the relay closed it while it was idle
        continue;
      }
      session.busy = true;
      return Promise.resolve(session);
    }
    const taken = new Promise<Session>((resolve, reject) => this.#queue.push({ resolve, reject }));
    if (this.#sessions.size + this.#opening < this.#connections) void this.#open();
    return taken;
  }

  async #open(): Promise<void> {
    this.#opening++;
    let session: Session;
    try {
      session = await Session.open(this.#relay);
    } catch (err) {
      this.#opening--;
      if (err instanceof NotPipelinable) this.#unfit = err;
      // The relay is down, or not one for this client: the sends no session is left to serve
      // hear of it (those a live session will serve keep waiting for it).
      const served = this.#unfit ? 0 : this.#sessions.size + this.#opening;
      for (const waiter of this.#queue.splice(served)) waiter.reject(err);
      return;
    }
    this.#opening--;
    if (this.#closed) return session.close();
    this.#sessions.add(session);
    this.#give(session);
  }

  #give(session: Session): void {
    if (!session.usable) {
      this.#sessions.delete(session);
      session.close();
      // Those waiting for the connection it was get a new one.
      if (this.#queue.length > this.#opening && this.#sessions.size + this.#opening < this.#connections) void this.#open();
      return;
    }
    const next = this.#queue.shift();
    session.busy = next !== undefined;
    next?.resolve(session);
  }
}
