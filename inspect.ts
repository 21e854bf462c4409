import { MongoClient } from 'mongodb';
const c = await new MongoClient('mongodb://127.0.0.1:27777/mailroom').connect();
const db = c.db();
const camp = await db.collection('campaigns').find({ status: 'SENDING' }).toArray();
for (const k of camp) {
  console.log(JSON.stringify({ id: k._id, status: k.status, cursor: k.cursor, recipientCount: k.recipientCount, exhausted: k.audienceExhausted, updatedAt: k.updatedAt }));
  const emails = await db.collection('emails').find({ sourceId: k._id }, { projection: { status: 1, committedAt: 1, publishedAt: 1, attempts: 1 } }).toArray();
  const by: Record<string, number> = {};
  for (const e of emails) { const key = `${e.status}${e.committedAt ? '+c' : ''}${e.publishedAt ? '+p' : ''}`; by[key] = (by[key] ?? 0) + 1; }
  console.log(emails.length, by);
}
const pending = await db.collection('_dead_letters').countDocuments({});
console.log('dead letters', pending);
await c.close();
