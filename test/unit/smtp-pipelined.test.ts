// The mailer's own pipelining SMTP client against a real SMTP server (smtp-server): what arrives,
// when the commit runs, how replies become errors, and when nodemailer takes over.
import { createServer, type AddressInfo, type Socket } from 'node:net';
import { SMTPServer, type SMTPServerOptions } from 'smtp-server';
import { afterEach, describe, expect, it } from 'vitest';
import { smtpFailureOf } from '../../apps/mailer/smtp-answers.ts';
import { dotStuffed, NotPipelinable, PipelinedPool, plainRelayOf } from '../../apps/mailer/smtp-pipelined.ts';
import { createTransport } from '../../apps/mailer/transport.ts';
import { mailerHandlers } from '../../apps/mailer/connections.ts';
import { loadConfig } from '../../runtime/config.ts';
import { mulberry32 } from '../harness/prng.ts';

interface Server {
  port: number;
  /** Messages taken, with whether their commit had run when the server had the whole message. */
  received: { to: string; raw: string; committedFirst: boolean }[];
  connections: number;
  /** Reads in which a message's end came with the next envelope. */
  groups: number;
}

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close(); // clients first: the server waits for them
});

const committed = new Set<string>();

/** `onMessage` may refuse a message (an error with its reply code) or drop the connection instead of answering. */
async function server(options: Partial<SMTPServerOptions> = {}, onMessage?: (to: string, socket: Socket | undefined) => Error | 'dropped' | void): Promise<Server> {
  const state: Server = { port: 0, received: [], connections: 0, groups: 0 };
  const sockets = new Map<number, Socket>();
  const smtp = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS'],
    logger: false,
    onConnect(_session, callback) {
      state.connections++;
      callback();
    },
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      stream.on('end', () => {
        const to = session.envelope.rcptTo[0].address;
        const refusal = onMessage?.(to, sockets.get(session.remotePort));
        if (refusal === 'dropped') return;
        if (refusal) return callback(refusal);
        state.received.push({ to, raw: Buffer.concat(chunks).toString('latin1'), committedFirst: committed.has(to) });
        callback();
      });
    },
    ...options,
  });
  smtp.on('error', () => {});
  smtp.server.on('connection', (socket: Socket) => {
    sockets.set(socket.remotePort!, socket);
    socket.on('data', (chunk: Buffer) => {
      if (/\r\n\.\r\nMAIL FROM:<[^>]*>\r\nRCPT TO:<[^>]*>\r\nDATA\r\n$/.test(chunk.toString('latin1'))) state.groups++;
    });
  });
  await new Promise<void>((resolve) => smtp.listen(0, '127.0.0.1', resolve));
  state.port = (smtp.server.address() as AddressInfo).port;
  closers.push(() => new Promise((resolve) => smtp.close(() => resolve())));
  return state;
}

function pool(port: number, connections = 2): PipelinedPool {
  const made = new PipelinedPool({ host: '127.0.0.1', port }, connections);
  closers.push(async () => made.close());
  return made;
}

const message = (to: string, body = 'Hello.\r\n') => Buffer.from(`From: a@shop.example\r\nTo: ${to}\r\nSubject: hi\r\nMessage-ID: <${to}>\r\n\r\n${body}`, 'latin1');
const send = (relay: PipelinedPool, to: string, body?: string) => relay.send(message(to, body), { from: 'a@shop.example', to: [to] }, () => void committed.add(to));
const failureOf = (promise: Promise<unknown>) => promise.then(() => undefined, (err: unknown) => err as Error & { responseCode?: number; command?: string });

describe('the pipelining SMTP client', () => {
  it('sends each message once, whole and dot-stuffed, over at most its connections, committing each before its end', async () => {
    const relay = await server();
    const client = pool(relay.port, 2);
    const bodies = ['Hello.\r\n', '.starts with a dot\r\n..two\r\nmid . dot\r\n.\r\n', 'no line end at the end', ''];
    const answers = await Promise.all(Array.from({ length: 40 }, (_, i) => send(client, `r${i}@customer.example`, bodies[i % bodies.length])));

    expect(answers.every((answer) => answer.startsWith('250'))).toBe(true);
    expect(relay.received.map((m) => m.to).sort()).toEqual(Array.from({ length: 40 }, (_, i) => `r${i}@customer.example`).sort());
    for (const got of relay.received) {
      const i = Number(/^r(\d+)@/.exec(got.to)![1]);
      const body = bodies[i % bodies.length];
      // What the server reads back is the message, a line end added where it had none.
      expect(got.raw).toBe(message(got.to, body.length === 0 || body.endsWith('\r\n') ? body : `${body}\r\n`).toString('latin1'));
      expect(got.committedFirst).toBe(true);
    }
    expect(relay.connections).toBe(2);
  });

  it('sends a message’s end and the next envelope in one write: a message costs one round trip', async () => {
    const relay = await server();
    const client = pool(relay.port, 1);
    await Promise.all(Array.from({ length: 20 }, (_, i) => send(client, `r${i}@customer.example`)));
    expect(relay.received).toHaveLength(20);
    // Each of the 19 ends that had a message waiting behind it went with that message's envelope
    // (loopback hands a write over in one read; a few split reads would still leave most).
    expect(relay.groups).toBeGreaterThanOrEqual(15);
  });

  it('a message refused at its end, or lost with its connection, does not take the next one, whose envelope went with its end', async () => {
    const relay = await server({}, (to, socket) => {
      if (to.startsWith('spam')) return Object.assign(new Error('5.7.1 Message refused'), { responseCode: 554 });
      if (!to.startsWith('drop')) return;
      socket?.destroy();
      return 'dropped';
    });
    const client = pool(relay.port, 1);
    const [spam, first, lost, second] = await Promise.all(
      ['spam@customer.example', 'first@customer.example', 'drop@customer.example', 'second@customer.example'].map((to) => failureOf(send(client, to))),
    );
    expect(spam).toMatchObject({ responseCode: 554, command: 'DATA' });
    expect(first).toBeUndefined();
    expect(smtpFailureOf(lost)).toEqual({ kind: 'outage' });
    // Its envelope was on the lost connection, its message not begun: it went on a new one.
    expect(second).toBeUndefined();
    expect(relay.received.map((m) => m.to)).toEqual(['first@customer.example', 'second@customer.example']);
    expect(relay.groups).toBeGreaterThanOrEqual(2);
    expect(relay.connections).toBe(2);
  });

  it("turns refusals into nodemailer's error fields, and goes on with the next message on the same connection", async () => {
    const relay = await server({
      onMailFrom(address, _session, callback) {
        if (address.address === 'busy@shop.example') return callback(Object.assign(new Error('Try later'), { responseCode: 451 }));
        callback();
      },
      onRcptTo(address, _session, callback) {
        if (address.address.startsWith('gone')) return callback(Object.assign(new Error('5.1.1 No such mailbox'), { responseCode: 550 }));
        if (address.address.startsWith('full')) return callback(Object.assign(new Error('4.2.2 Mailbox full'), { responseCode: 452 }));
        callback();
      },
    }, (to) => (to.startsWith('spam') ? Object.assign(new Error('5.7.1 Message refused'), { responseCode: 554 }) : undefined));
    const client = pool(relay.port, 1);

    const gone = await failureOf(send(client, 'gone@customer.example'));
    expect(gone).toMatchObject({ responseCode: 550, command: 'RCPT TO' });
    expect(smtpFailureOf(gone)).toMatchObject({ kind: 'hard' });
    const full = await failureOf(send(client, 'full@customer.example'));
    expect(full).toMatchObject({ responseCode: 452, command: 'RCPT TO' });
    expect(smtpFailureOf(full)).toMatchObject({ kind: 'soft' });
    const spam = await failureOf(send(client, 'spam@customer.example'));
    expect(spam).toMatchObject({ responseCode: 554, command: 'DATA' });
    const busy = await failureOf(client.send(message('x@customer.example'), { from: 'busy@shop.example', to: ['x@customer.example'] }, () => {}));
    expect(busy).toMatchObject({ responseCode: 451, command: 'MAIL FROM' });
    expect(smtpFailureOf(busy)).toEqual({ kind: 'outage' });

    await send(client, 'ok@customer.example');
    expect(relay.received.map((m) => m.to)).toEqual(['ok@customer.example']);
    expect(relay.connections).toBe(1);
  });

  it('a commit that throws leaves the message unterminated: the server keeps nothing', async () => {
    const relay = await server();
    const client = pool(relay.port);
    const refused = new Error('the commit log is full');
    await expect(client.send(message('c@customer.example'), { from: 'a@shop.example', to: ['c@customer.example'] }, () => { throw refused; })).rejects.toBe(refused);
    await send(client, 'd@customer.example');
    expect(relay.received.map((m) => m.to)).toEqual(['d@customer.example']);
  });

  it('a connection lost mid-message is an outage (no reply code), and the next send opens another', async () => {
    const relay = await server({}, (to, socket) => {
      if (!to.startsWith('drop')) return;
      socket?.destroy();
      return 'dropped';
    });
    const client = pool(relay.port, 1);
    const lost = await failureOf(send(client, 'drop@customer.example'));
    expect(lost?.responseCode).toBeUndefined();
    expect(smtpFailureOf(lost)).toEqual({ kind: 'outage' });
    await send(client, 'after@customer.example');
    expect(relay.received.map((m) => m.to)).toEqual(['after@customer.example']);
    expect(relay.connections).toBe(2);
  });

  it('an answer nobody asked for ends the session: it is never taken for the next command’s', async () => {
    // A scripted relay: its first connection says a stray "250" once idle; the next one is well-behaved.
    let connections = 0;
    const taken: string[] = [];
    const raw = createServer((socket) => {
      const first = ++connections === 1;
      let data = false;
      socket.write('220 scripted\r\n');
      socket.on('data', (chunk: Buffer) => {
        for (const line of chunk.toString('latin1').split('\r\n').filter(Boolean)) {
          if (data) {
            if (line === '.') [data] = [false, socket.write('250 taken\r\n')];
            else if (line.startsWith('To: ')) taken.push(line.slice(4));
          } else if (line.startsWith('EHLO')) {
            socket.write('250-scripted\r\n250 PIPELINING\r\n');
            if (first) setTimeout(() => socket.write('250 stray\r\n'), 50);
          } else if (line === 'DATA') [data] = [true, socket.write('354 go on\r\n')];
          else socket.write('250 ok\r\n');
        }
      });
    });
    await new Promise<void>((resolve) => raw.listen(0, '127.0.0.1', resolve));
    closers.push(() => new Promise((resolve) => raw.close(() => resolve())));
    const client = pool((raw.address() as AddressInfo).port, 1);

    await send(client, 'warm@customer.example'); // on the first session, before its stray answer
    await new Promise((resolve) => setTimeout(resolve, 150)); // the stray answer comes meanwhile
    await expect(send(client, 'after@customer.example')).resolves.toBe('250 taken');
    expect(taken).toEqual(['warm@customer.example', 'after@customer.example']);
    expect(connections).toBe(2);
  });

  it('a relay that does not pipeline is not one for it; the transport then sends through nodemailer', async () => {
    const relay = await server({ hidePIPELINING: true });
    await expect(send(pool(relay.port), 'p@customer.example')).rejects.toBeInstanceOf(NotPipelinable);
    const transport = createTransport({ smtpUrl: `smtp://127.0.0.1:${relay.port}`, dataDir: '/nonexistent' }, 2);
    closers.push(async () => transport.close());
    let commits = 0;
    // At once: each of them learns that the relay is nodemailer's, and each is sent once.
    const recipients = ['n1@customer.example', 'n2@customer.example', 'n3@customer.example'];
    await Promise.all(
      recipients.map((to) => transport.send({ raw: message(to), envelope: { from: 'a@shop.example', to: [to] }, messageId: `<${to}>`, subject: 'hi' }, () => void commits++)),
    );
    expect(relay.received.map((m) => m.to).sort()).toEqual(recipients);
    expect(commits).toBe(3);
  });

  it('takes plain smtp:// relays only: credentials, TLS or options are nodemailer’s', () => {
    expect(plainRelayOf('smtp://127.0.0.1:2525')).toEqual({ host: '127.0.0.1', port: 2525 });
    expect(plainRelayOf('smtp://mta.internal')).toEqual({ host: 'mta.internal', port: 587 });
    expect(plainRelayOf('smtp://[::1]:25')).toEqual({ host: '::1', port: 25 });
    for (const url of ['smtp://user:pass@mta.internal:587', 'smtps://mta.internal', 'smtp://mta.internal:25?tls.rejectUnauthorized=false', 'not a url']) {
      expect(plainRelayOf(url)).toBeUndefined();
    }
    expect(dotStuffed(Buffer.from('.a\r\nb\r\n.c\r\n')).toString()).toBe('..a\r\nb\r\n..c\r\n');
  });

  it('doubles the dot at the start of every line, and ends the message with a line end, on generated messages', () => {
    // RFC 5321 §4.5.2, as a regular expression on the text: what dotStuffed does on the bytes.
    const expected = (raw: string) => {
      const text = raw.replace(/(^|\n)\./g, '$1..');
      return text.endsWith('\r\n') ? text : `${text}\r\n`;
    };
    const random = mulberry32(21);
    const pieces = ['.', '..', 'a', '\r\n', '\n', '\r', 'é', ' '];
    for (let i = 0; i < 5_000; i++) {
      const raw = Array.from({ length: 1 + Math.floor(random() * 12) }, () => pieces[Math.floor(random() * pieces.length)]).join('');
      expect(dotStuffed(Buffer.from(raw, 'latin1')).toString('latin1')).toBe(expected(raw));
    }
  });
});

describe('SMTP_CONNECTIONS', () => {
  it('is 16 unless set, a whole number of at least 1, and the mailer keeps four emails in flight per connection past 64', () => {
    expect(loadConfig({}).smtpConnections).toBe(16);
    expect(loadConfig({ SMTP_CONNECTIONS: '64' }).smtpConnections).toBe(64);
    for (const bad of ['0', '2.5', 'many', '-3']) expect(() => loadConfig({ SMTP_CONNECTIONS: bad })).toThrow(/SMTP_CONNECTIONS/);
    expect([1, 16, 64, 128].map(mailerHandlers)).toEqual([256, 256, 256, 512]);
  });
});
