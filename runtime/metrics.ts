/**
 * The metrics of one process, served as Prometheus text on `GET /metrics` (the api on PORT, and in
 * distributed mode the mailer on its own PORT). Counters and the latency histogram count what this
 * process did since it started; the gauges marked "at scrape time" ask the store or the actor
 * runtime when scraped (the store at most every 2 s), so every api replica reports the same
 * platform-wide number for those (aggregate them with max(), not sum()).
 *
 * | metric | type | labels | what |
 * |---|---|---|---|
 * | `mailroom_http_request_duration_seconds` | histogram | method, route, status | API latency; `route` is the route pattern (`/contacts/:id`), `unmatched` for 404s |
 * | `mailroom_emails_total` | counter | outcome | mailer: `sent` (first hand-over to SMTP), `delivered`, `bounced`, `failed`, `skipped`, `deferred` (SMTP outage or a 4xx, retried) |
 * | `mailroom_mailer_circuit_state` | gauge | state | mailer: 1 for the SMTP circuit breaker's state (`closed`, `half_open`, `open`), 0 for the others |
 * | `mailroom_outbound_queue_depth` | gauge | | api, at scrape time: emails accepted and not yet handed to SMTP (QUEUED or SENDING) |
 * | `mailroom_reminders_pending` | gauge | | api: actor reminders set and not yet fired; see `ActorRuntime.pendingReminders` |
 * | `mailroom_workflow_executions` | gauge | status | api, at scrape time: workflow executions by status |
 *
 * plus prom-client's default process metrics (`process_*`, `nodejs_*`).
 */
import { timingSafeEqual, createHash } from 'node:crypto';
import type { RequestHandler } from 'express';
import type { Logger } from 'pino';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { ActorRuntime } from '../ports/actors.ts';
import type { DocumentStore } from '../ports/store.ts';

export type EmailOutcome = 'sent' | 'delivered' | 'bounced' | 'failed' | 'skipped' | 'suppressed' | 'deferred';
const EMAIL_OUTCOMES: EmailOutcome[] = ['sent', 'delivered', 'bounced', 'failed', 'skipped', 'suppressed', 'deferred'];

/** The execution statuses (the spec's, and WAITING), reported as 0 until an execution has them. */
const WORKFLOW_STATUSES = ['PENDING', 'RUNNING', 'WAITING', 'COMPLETED', 'CANCELLED', 'FAILED'];

const CIRCUIT_STATES = ['closed', 'half_open', 'open'] as const;

/**
 * The process metrics (CPU, memory, event loop, GC) belong to the process, not to one platform
 * in it: collected once, however many platforms a process boots (tests boot many).
 */
let processRegistry: Registry | undefined;
function processMetrics(): Registry {
  if (!processRegistry) {
    processRegistry = new Registry();
    collectDefaultMetrics({ register: processRegistry });
  }
  return processRegistry;
}

/** Gauges counted in the store are at most this old. */
const STORE_REFRESH_MS = 2_000;

/** What the circuit gauge reads; opossum's CircuitBreaker has these. */
export interface CircuitView {
  readonly opened: boolean;
  readonly halfOpen: boolean;
}

export interface MetricSources {
  store: DocumentStore;
  actors: ActorRuntime;
  roles: { api: boolean; mailer: boolean };
  log: Logger;
}

export class Metrics {
  readonly registry = new Registry();
  readonly #http: Histogram<'method' | 'route' | 'status'>;
  readonly #emails: Counter<'outcome'>;
  #circuit: CircuitView | undefined;

  constructor(sources: MetricSources) {
    const { store, actors, roles, log } = sources;
    const registers = [this.registry];

    this.#http = new Histogram({
      name: 'mailroom_http_request_duration_seconds',
      help: 'HTTP request latency by route pattern and status',
      labelNames: ['method', 'route', 'status'],
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers,
    });
    this.#emails = new Counter({
      name: 'mailroom_emails_total',
      help: 'Emails by outcome in the mailer: sent (first hand-over to SMTP), delivered, bounced, failed, skipped, deferred (SMTP outage or a 4xx, retried)',
      labelNames: ['outcome'],
      registers: roles.mailer ? registers : [],
    });
    for (const outcome of EMAIL_OUTCOMES) this.#emails.inc({ outcome }, 0);

    if (roles.mailer) {
      const circuit = () => this.#circuit;
      new Gauge({
        name: 'mailroom_mailer_circuit_state',
        help: "1 for the state the mailer's SMTP circuit breaker is in, 0 for the others",
        labelNames: ['state'],
        registers,
        collect() {
          const breaker = circuit();
          const now = !breaker ? 'closed' : breaker.opened ? 'open' : breaker.halfOpen ? 'half_open' : 'closed';
          for (const state of CIRCUIT_STATES) this.set({ state }, state === now ? 1 : 0);
        },
      });
    }

    if (roles.api) {
      // The store is asked at most once per STORE_REFRESH_MS however often /metrics is called
      // (concurrent scrapes share one query), and a failing store leaves the last value and a
      // warning, not a failed scrape.
      const guarded = (name: string, refresh: () => Promise<void>) => {
        let last = 0;
        let running: Promise<void> | undefined;
        return async () => {
          if (running) return running;
          if (Date.now() - last < STORE_REFRESH_MS) return;
          running = refresh()
            .catch((err) => log.warn({ err, metric: name }, 'metric not refreshed'))
            .finally(() => {
              last = Date.now();
              running = undefined;
            });
          return running;
        };
      };
      const queueDepth: Gauge = new Gauge({
        name: 'mailroom_outbound_queue_depth',
        help: 'Emails accepted and not yet handed to SMTP (QUEUED or SENDING), counted in the store at scrape time',
        registers,
        collect: guarded('mailroom_outbound_queue_depth', async () => {
          const emails = store.collection('emails');
          const [queued, sending] = await Promise.all([emails.countDocuments({ status: 'QUEUED' }), emails.countDocuments({ status: 'SENDING' })]);
          queueDepth.set(queued + sending);
        }),
      });
      new Gauge({
        name: 'mailroom_reminders_pending',
        help: 'Actor reminders set and not yet fired (embedded: all of them; Dapr: those this replica set and has not seen fire or deleted)',
        registers,
        collect() {
          this.set(actors.pendingReminders());
        },
      });
      const executions: Gauge<'status'> = new Gauge({
        name: 'mailroom_workflow_executions',
        help: 'Workflow executions by status, counted in the store at scrape time',
        labelNames: ['status'],
        registers,
        collect: guarded('mailroom_workflow_executions', async () => {
          const groups = await store
            .collection('workflow_executions')
            .aggregate<{ _id: unknown; n: number }>([{ $group: { _id: '$status', n: { $sum: 1 } } }]);
          const counts = new Map<string, number>(WORKFLOW_STATUSES.map((s) => [s, 0]));
          for (const g of groups) if (typeof g._id === 'string') counts.set(g._id, g.n);
          executions.reset();
          for (const [status, n] of counts) executions.set({ status }, n);
        }),
      });
    }
  }

  observeRequest(method: string, route: string, status: number, seconds: number): void {
    this.#http.observe({ method, route, status: String(status) }, seconds);
  }

  emailOutcome(outcome: EmailOutcome): void {
    this.#emails.inc({ outcome });
  }

  /** Everything this process reports, in the Prometheus text format. */
  async text(): Promise<string> {
    return Registry.merge([processMetrics(), this.registry]).metrics();
  }

  readonly contentType = Registry.PROMETHEUS_CONTENT_TYPE;

  /** The mailer's SMTP circuit breaker, for `mailroom_mailer_circuit_state`. */
  watchCircuit(breaker: CircuitView): void {
    this.#circuit = breaker;
  }
}

/**
 * `GET /metrics`. Open unless `METRICS_TOKEN` is set; then it takes `Authorization: Bearer <token>`
 * (401 otherwise), for deployments whose API port is reachable by more than the scraper.
 */
export function metricsEndpoint(metrics: Metrics, token: string | undefined): RequestHandler {
  const expected = token ? digest(token) : undefined;
  return async (req, res) => {
    if (expected) {
      const given = /^Bearer\s+(\S+)\s*$/i.exec(req.get('authorization') ?? '')?.[1];
      if (!given || !timingSafeEqual(digest(given), expected)) {
        res.status(401).setHeader('WWW-Authenticate', 'Bearer realm="metrics"').type('text/plain').send('metrics need Authorization: Bearer <METRICS_TOKEN>\n');
        return;
      }
    }
    res.setHeader('Content-Type', metrics.contentType);
    res.setHeader('Cache-Control', 'no-store');
    res.send(await metrics.text());
  };
}

const digest = (value: string) => createHash('sha256').update(value).digest();
