import SMTPConnection from 'nodemailer/lib/smtp-connection';

export interface SmtpAnswer {
  accepted: string[];
  rejected: string[];
  /** The server's last answer (to DATA when the message went, else to the refused RCPT). */
  response: string;
  /** The SMTP code of a refusal, when the transaction failed. */
  responseCode?: number;
}

/**
 * One SMTP transaction to `127.0.0.1:port`, as another mail server would make it: `from` may be
 * empty (the null sender of a bounce report), STARTTLS is used when offered (certificate not
 * checked, as MTAs do opportunistically). A refusal comes back as an answer, not an error.
 */
export async function deliverMail(port: number, envelope: { from: string; to: string[] }, raw: string | Buffer): Promise<SmtpAnswer> {
  const connection = new SMTPConnection({ host: '127.0.0.1', port, tls: { rejectUnauthorized: false }, name: 'relay.test' });
  await new Promise<void>((resolve, reject) => {
    connection.once('error', reject);
    connection.connect(() => resolve());
  });
  try {
    return await new Promise<SmtpAnswer>((resolve) => {
      connection.send(envelope, raw, (err, info) => {
        if (err) {
          const e = err as Error & { responseCode?: number; response?: string; rejected?: string[] };
          resolve({ accepted: [], rejected: e.rejected ?? envelope.to, response: e.response ?? e.message, responseCode: e.responseCode });
        } else resolve({ accepted: info.accepted.map(String), rejected: info.rejected.map(String), response: info.response });
      });
    });
  } finally {
    connection.quit();
  }
}
