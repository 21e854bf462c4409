/**
 * How many SMTP connections a mailer keeps open to its relay (SMTP_CONNECTIONS), and how many
 * emails it has in flight to keep them busy. Apart from transport.ts so that the config reads the
 * default without loading nodemailer.
 *
 * Each message costs a round trip (two through nodemailer), so the rate grows with connections
 * where the relay is far: on loopback 10 and 16 sent a campaign at 1,206 and 1,240 emails/s
 * (bench:campaign; 5, with 32 in flight, 1,016–1,021); with the relay 20 ms away, 16 sent 698/s and
 * 64 (256 in flight) 1,771/s (bench:campaign --relay-rtt-ms 20, 10,000 recipients, relay-signed;
 * bench/results/campaign-profile.md, session 17). Relays take this many from one client:
 * Postfix's default per-client limit is 50; listmonk opens 10 per server.
 */
export const DEFAULT_SMTP_CONNECTIONS = 16;

/**
 * Emails the mailer has between its claim and its finish at once: enough to keep the sending
 * threads' tasks (four per connection, send-pool.ts) full while others wait on their claim's or
 * finish's commit. With more in flight each group commit, event-loop turn and SMTP write carries
 * more emails: 128 (with 16 connections) sent a 20,000-recipient campaign at 1,240 emails/s and
 * 1.32 ms of CPU each, against 1,016–1,021/s and 1.51–1.54 ms with 32 (and 5 connections). 256
 * gained nothing more then (session 10), but does since the sending path got cheaper: in pairs run
 * each way against 128, 4.8% more emails/s relay-signed (40k) and 3.8% signed (20k), every pair
 * ahead, for no more peak RSS; 512 gained nothing over 256 (bench/results/campaign-profile.md,
 * session 22). Four per connection beyond 64 connections: a far relay's connections each wait out
 * round trips. Eight (as many again for emails waiting on a commit) were no faster with 96
 * connections to a relay 20 ms away, for more CPU and RSS (session 24).
 */
export const mailerHandlers = (connections: number) => Math.max(256, 4 * connections);
