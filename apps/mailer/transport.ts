import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import nodemailer from 'nodemailer';
import type Mail from 'nodemailer/lib/mailer';
import type { Logger } from 'pino';
import type { Config } from '../../runtime/config.ts';

export interface SendResult {
  messageId: string;
  accepted: boolean;
  response: string;
}

export interface Transport {
  send(message: Mail.Options): Promise<SendResult>;
  close(): void;
}

/** SMTP when SMTP_URL is set; otherwise the dev outbox: `.eml` files under DATA_DIR and a log line. */
export function createTransport(config: Config, log: Logger): Transport {
  if (config.smtpUrl) {
    const smtp = nodemailer.createTransport(`${config.smtpUrl}${config.smtpUrl.includes('?') ? '&' : '?'}pool=true`);
    return {
      async send(message) {
        const info = await smtp.sendMail(message);
        return { messageId: info.messageId, accepted: info.accepted.length > 0, response: info.response };
      },
      close: () => smtp.close(),
    };
  }
  const dir = join(config.dataDir, 'outbox');
  mkdirSync(dir, { recursive: true });
  const builder = nodemailer.createTransport({ streamTransport: true, buffer: true, newline: 'unix' });
  return {
    async send(message) {
      const info = await builder.sendMail(message);
      const file = join(dir, `${Date.now()}-${info.messageId.replace(/[^A-Za-z0-9.@-]/g, '')}.eml`);
      writeFileSync(file, info.message as Buffer);
      log.info({ to: message.to, subject: message.subject, file, text: message.text }, 'dev outbox: email kept (no SMTP_URL)');
      return { messageId: info.messageId, accepted: true, response: 'dev outbox' };
    },
    close: () => builder.close(),
  };
}
