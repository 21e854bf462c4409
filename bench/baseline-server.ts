/**
 * The baseline of bench/track.ts: the least a `/v1/track` endpoint could do on this stack. A bare
 * express 5 app whose handler parses the JSON body, does one embedded-store insertOne (SQLite
 * commit and fsync included) and answers 200 JSON. No auth, no validation, no contact, no actor, no pub/sub.
 *
 * Run as a child process by bench/track.ts:
 *   PORT=... DATA_DIR=<fresh temp dir> node --import tsx bench/baseline-server.ts
 * GET /health answers once it listens; GET /count says how many documents were written, so the
 * benchmark can check that no acknowledged write was lost here either.
 */
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import express from 'express';
import { SqliteStore } from '../adapters/sqlite/store.ts';

const port = Number(process.env.PORT ?? 0);
const dataDir = process.env.DATA_DIR;
if (!dataDir) throw new Error('DATA_DIR must name a fresh directory');

const store = await SqliteStore.open(join(dataDir, 'mailroom.db'));
const writes = store.collection('bench_events');

const app = express();
app.disable('x-powered-by');
app.use(express.json());

app.get('/health', (_req, res) => {
  res.json({ success: true, data: { status: 'ok' } });
});

app.post('/v1/track', async (req, res) => {
  const body = (req.body ?? {}) as Record<string, unknown>;
  const id = randomUUID();
  const createdAt = new Date().toISOString();
  await writes.insertOne({ _id: id, email: body.email, name: body.event, data: body.data ?? {}, createdAt });
  res.json({ success: true, data: { event: id, timestamp: createdAt } });
});

app.get('/count', async (_req, res) => {
  res.json({ success: true, data: { total: await writes.countDocuments({}) } });
});

const server = app.listen(port, '127.0.0.1');

let closing = false;
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => {
    if (closing) return;
    closing = true;
    server.close();
    server.closeAllConnections();
    // exit() rather than waiting for the loop to drain, so --cpu-prof writes its profile promptly.
    store.close().finally(() => process.exit(0));
  });
}
