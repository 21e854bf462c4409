import { mkdirSync, writeFileSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import nodemailer from 'nodemailer';
import type { Config } from '../../runtime/config.ts';
import { DEFAULT_SMTP_CONNECTIONS } from './connections.ts';
import type { Rendered } from './render.ts';
import { isAsciiEnvelope, NotPipelinable, PipelinedPool, plainRelayOf } from './smtp-pipelined.ts';

export interface SendResult {
  messageId: string;
  response: string;
  /** The dev outbox's file the message was kept in (no SMTP_URL). */
  kept?: string;
}

export interface Transport {
  /**
   * Sends `message` and calls `commit` at the last moment before the transaction can complete:
   * the whole message is on the socket, the terminating "." is not. A crash before the commit
   * leaves an incomplete transaction, which the server discards; a crash after it leaves a
   * complete one (the kernel still sends what was written), which the server keeps. So the
   * commit record says which way it went, and a restarted mailer neither loses nor repeats it.
   */
  send(message: Rendered, commit: () => void): Promise<SendResult>;
  close(): void;
}

/** Commits of the messages being sent, by Message-ID. */
const commits = new Map<string, () => void>();

/**
 * On nodemailer's connections: runs each transaction's commit right before its terminating "." is
 * written, in the same tick.
 * After DATA, the only "\r\n.\r\n" a client ever writes is the terminator (dot-stuffing doubles
 * a leading dot in content), and the message's own Message-ID header, near the top of the
 * content, names the commit to run.
 */
function commitBeforeTerminators(socket: Socket): void {
  const write = socket.write.bind(socket) as (...args: unknown[]) => boolean;
  let inData = false;
  let head = '';
  let messageId: string | undefined;
  socket.write = ((chunk: string | Uint8Array, ...rest: unknown[]) => {
    const text = typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString('latin1');
    if (!inData) {
      if (/^DATA\r\n$/i.test(text)) [inData, head, messageId] = [true, '', undefined];
      return write(chunk, ...rest);
    }
    if (messageId === undefined && head.length < 65_536) {
      head += text;
      // A long id is folded onto the next line ("Message-ID:\r\n <…>").
      messageId = /\r\nMessage-ID:[ \t]*(?:\r\n[ \t]+)?(<[^>\r\n]+>)/i.exec(`\r\n${head}`)?.[1];
    }
    if (text === '.\r\n' || text.endsWith('\r\n.\r\n')) {
      inData = false;
      const commit = messageId ? commits.get(messageId) : undefined;
      if (commit) {
        try {
          commit(); // synchronous: the "." follows in the same tick
        } catch (err) {
          socket.destroy(err as Error);
          return false;
        }
        return write(chunk, ...rest);
      }
      // Only a message sent without its commit registered lands here; it would go out unguarded.
      socket.destroy(new Error(`no commit for the message on this connection (${messageId ?? 'no Message-ID found'})`));
      return false;
    }
    return write(chunk, ...rest);
  }) as typeof socket.write;
}

/**
 * SMTP when SMTP_URL is set, over `connections` connections (connections.ts); otherwise the dev
 * outbox: `.eml` files under DATA_DIR (the mailer logs each).
 */
export function createTransport(config: Pick<Config, 'smtpUrl' | 'dataDir'>, connections = DEFAULT_SMTP_CONNECTIONS): Transport {
  if (config.smtpUrl) return smtpTransport(config.smtpUrl, connections);
  const dir = join(config.dataDir, 'outbox');
  mkdirSync(dir, { recursive: true });
  return {
    async send({ raw, messageId }, commit) {
      commit();
      const file = join(dir, `${Date.now()}-${messageId.replace(/[^A-Za-z0-9.@-]/g, '')}.eml`);
      writeFileSync(file, raw);
      return { messageId, response: '250 kept in the dev outbox', kept: file };
    },
    close: () => {},
  };
}

/**
 * The relay through our own pipelining client (smtp-pipelined.ts) when its URL is a plain
 * `smtp://host:port` and it turns out to pipeline and offer no STARTTLS; through nodemailer for
 * anything else (credentials, TLS, options), and for good once the relay proves not to be one
 * for ours (nothing was sent then). A message to or from a non-ASCII address goes through
 * nodemailer either way.
 */
function smtpTransport(url: string, connections: number): Transport {
  const relay = plainRelayOf(url);
  let pipelined = relay && new PipelinedPool(relay, connections);
  let nodemailerPool: Transport | undefined;
  const fallback = () => (nodemailerPool ??= nodemailerTransport(url, connections));
  return {
    async send(message, commit) {
      if (pipelined && isAsciiEnvelope(message.envelope)) {
        try {
          return { messageId: message.messageId, response: await pipelined.send(message.raw, message.envelope, commit) };
        } catch (err) {
          if (!(err instanceof NotPipelinable)) throw err;
          pipelined?.close(); // sends that were waiting for it learn the same meanwhile
          pipelined = undefined;
        }
      }
      return fallback().send(message, commit);
    },
    close() {
      pipelined?.close();
      nodemailerPool?.close();
    },
  };
}

/**
 * A pool of SMTP connections with TCP_NODELAY: SMTP is a chatty request/response protocol, and
 * with Nagle's algorithm against delayed ACKs every command waits tens of milliseconds (measured
 * here: ~109 messages/s on 5 connections without it, ~1,300/s with it). Ours does the same.
 */
function nodemailerTransport(url: string, connections: number): Transport {
  const smtp = nodemailer.createTransport({
    url,
    pool: true,
    maxConnections: connections,
    maxMessages: Infinity,
    getSocket(options: { host?: string; port?: number }, callback: (err: Error | null, socket?: { connection: unknown }) => void) {
      const socket = connect({ host: options.host ?? 'localhost', port: options.port ?? 25 });
      socket.setNoDelay(true);
      commitBeforeTerminators(socket);
      socket.once('connect', () => callback(null, { connection: socket }));
      socket.once('error', (err) => callback(err));
    },
  } as never);
  // The pool's own transport interface, without nodemailer's Mailer around it: the message is
  // built and signed already (render.ts), and the Mailer would wrap it in a MIME node (headers parsed, ids
  // generated, a stream pipeline) only to stream the same bytes back out.
  const pool = smtp.transporter as unknown as { send(mail: RawMail, callback: (err: Error | null, info?: { response: string }) => void): void };
  return {
    async send({ raw, envelope, messageId }, commit) {
      commits.set(messageId, commit);
      try {
        const info = await new Promise<{ response: string }>((resolve, reject) =>
          pool.send(rawMail(raw, envelope, messageId), (err, sent) => (err ? reject(err) : resolve(sent!))),
        );
        return { messageId, response: info.response };
      } finally {
        commits.delete(messageId);
      }
    },
    close: () => smtp.close(),
  };
}

/** What nodemailer's SMTP pool reads of a message it sends (`mail.message` is a MIME node there). */
interface RawMail {
  data: Record<string, never>;
  message: {
    getHeader(name: string): string | undefined;
    getEnvelope(): { from: string; to: string[] };
    messageId(): string;
    createReadStream(): PassThrough;
  };
}

function rawMail(raw: Buffer, envelope: { from: string; to: string[] }, messageId: string): RawMail {
  return {
    data: {},
    message: {
      getHeader: (name) => (name.toLowerCase() === 'message-id' ? messageId : undefined),
      getEnvelope: () => ({ from: envelope.from, to: [...envelope.to] }),
      messageId: () => messageId,
      createReadStream: () => new PassThrough().end(raw),
    },
  };
}
