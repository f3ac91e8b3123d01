// Webhook delivery: the fan-out of recorded events into delivery attempts, the durable job that
// sends one attempt, signing, and the outbound-HTTP guard rails.
//
// Every attempt is a `webhook_deliveries` row created before it is sent (so the exact payload,
// including its `event_delivery_id`, is fixed and visible) and one `webhook.deliver` job per chain
// drives it. The job is not transactional (it waits on the network); its outcome and the next
// attempt's row are recorded in one transaction, and a job that re-runs after a crash notices an
// attempt that was already recorded and moves on to the next one. Delivery is at-least-once: a crash
// between the receiver's 2xx and that transaction repeats the attempt (same event_id).
import { createHmac, randomBytes } from 'node:crypto';
import type * as Undici from 'undici';
import { lazy } from '../../shared/lazy.js';
import { memoized } from '../../shared/memo.js';
import type { AppContext } from '../../shared/context.js';
import type { Tx } from '../../shared/db/index.js';
import type { RecordedEvent } from '../../shared/events.js';
import { newId } from '../../shared/ids.js';
import { guardedLookup, outboundUrlProblem, refusedDestination } from '../../shared/net.js';
import { enqueue, type JobKind } from '../../shared/jobs.js';
import { activeTraceparent, deliveryOutcome } from '../../shared/observability/index.js';
import { Coalescer } from '../../shared/coalesce.js';
import {
  findAttempt,
  insertAttempt,
  insertFirstAttempt,
  listEnabledWebhooks,
  lockWebhooksShared,
  markAttemptNotSent,
  readAttemptsWithWebhook,
  recordSent,
  settleChain,
  type AttemptWithWebhook,
  type Sent,
  type WebhookDeliveriesTable,
  type WebhooksTable,
} from './storage.js';

const undici = lazy<typeof Undici>('undici');

export const DELIVER = 'webhook.deliver';

declare module '../../shared/jobs.js' {
  interface JobMap {
    /** Sends the attempt `deliveryId` (then reschedules itself with the chain's next attempt, if any). */
    'webhook.deliver': { deliveryId: string };
  }
}

// ---- Settings ---------------------------------------------------------------------------------

interface WebhookSettings {
  /** Per-attempt limit for connecting, sending and reading the response (SLIPWAY_WEBHOOK_TIMEOUT_MS). */
  timeoutMs: number;
  /** Multiplies the retry schedule (SLIPWAY_WEBHOOK_RETRY_SCALE; e.g. 0.0001 in tests). */
  retryScale: number;
  /** Send `<prefix>-signature` with the secret itself (SLIPWAY_WEBHOOK_PLAIN_SECRET_HEADER, default on). */
  plainSecretHeader: boolean;
}

export function webhookSettings(env: Record<string, string | undefined>): WebhookSettings {
  const num = (v: string | undefined, d: number) => (v !== undefined && v !== '' && Number.isFinite(Number(v)) && Number(v) >= 0 ? Number(v) : d);
  const plain = env.SLIPWAY_WEBHOOK_PLAIN_SECRET_HEADER;
  return {
    timeoutMs: Math.max(1, num(env.SLIPWAY_WEBHOOK_TIMEOUT_MS, 10_000)),
    retryScale: num(env.SLIPWAY_WEBHOOK_RETRY_SCALE, 1),
    plainSecretHeader: plain === undefined || plain === '' ? true : ['1', 'true', 'yes', 'on'].includes(plain.toLowerCase()),
  };
}

/** Delays before retries 1..12 (the hosted service's schedule). */
const RETRY_SCHEDULE_MS = [1, 5, 10, 30, 60, 120, 240, 480, 960, 1440, 2880, 4320].map((m) => m * 60_000);
export const MAX_ATTEMPTS = RETRY_SCHEDULE_MS.length + 1;
/** Bytes of the response body kept in the delivery record; reading stops there. */
export const RESPONSE_EXCERPT_BYTES = 2048;

/** Delay before the attempt after `attempt` (1-based), scaled, with ±10 % jitter. */
export function retryDelayMs(attempt: number, scale: number): number {
  const base = RETRY_SCHEDULE_MS[attempt - 1] ?? RETRY_SCHEDULE_MS[RETRY_SCHEDULE_MS.length - 1]!;
  return Math.round(base * scale * (0.9 + Math.random() * 0.2));
}

// ---- Secrets and signatures ------------------------------------------------------------------

export const newSecret = () => `whsec_${randomBytes(24).toString('base64')}`;

/** Standard Webhooks' HMAC key of a secret: the base64-decoded part of `whsec_...`. */
const hmacKey = (secret: string): Buffer => Buffer.from(secret.startsWith('whsec_') ? secret.slice(6) : secret, 'base64');

/** Standard Webhooks: base64 HMAC-SHA256 of `id.timestamp.body`, keyed with a secret's `hmacKey`. */
function sign(key: Buffer, id: string, timestamp: number, body: string): string {
  return `v1,${createHmac('sha256', key).update(`${id}.${timestamp}.${body}`).digest('base64')}`;
}

// ---- Where we may connect --------------------------------------------------------------------

/**
 * Why an address may not be contacted, or null when it may: link-local and cloud-metadata addresses
 * never, and in production mode nothing but global unicast. Classified by ipaddr.js in
 * `shared/net.ts`; IPv6 forms embedding IPv4 (mapped, compatible, NAT64, 6to4, Teredo) are judged by
 * the embedded address. Used on the endpoint at creation/update and on every resolved address at
 * connect time.
 */
export const refusedAddress = (address: string, production: boolean): string | null => refusedDestination(address, production);

/** Checks an endpoint URL's form (scheme, host literal); the resolved addresses are checked at delivery. */
export const endpointProblem = (endpoint: string, production: boolean): string | null =>
  outboundUrlProblem(endpoint, production, { label: 'endpoint', httpsInProduction: true });

/** A dispatcher whose DNS lookups refuse forbidden addresses, so the checked address is the one connected to. */
export function guardedAgent(production: boolean, timeoutMs: number): Undici.Agent {
  const lookup = guardedLookup(production, 'EWEBHOOKREFUSED');
  return new (undici().Agent)({
    // The per-attempt AbortController is the overall limit; these are backstops.
    connect: { lookup: lookup as any, timeout: timeoutMs + 1000 },
    headersTimeout: timeoutMs + 1000,
    bodyTimeout: timeoutMs + 1000,
    keepAliveTimeout: 4_000,
    connections: 32,
  });
}

// ---- Sending one request ---------------------------------------------------------------------

interface SendResult {
  ok: boolean;
  status: number | null;
  /** Response excerpt, or the reason nothing usable came back. */
  response: string | null;
  timeMs: number;
}

/** Sends `body` to `endpoint`, whose form the caller has checked (`endpointProblem`). */
export async function post(agent: Undici.Agent, timeoutMs: number, endpoint: string, headers: Record<string, string>, body: string): Promise<SendResult> {
  const started = performance.now();
  const elapsed = () => Math.round(performance.now() - started);
  const ac = new AbortController();
  const timer = setTimeout(() => ac.abort(new Error(`timed out after ${timeoutMs} ms`)), timeoutMs);
  try {
    const res = await undici().request(endpoint, { method: 'POST', headers, body, dispatcher: agent, signal: ac.signal, maxRedirections: 0 });
    // Read at most RESPONSE_EXCERPT_BYTES, then drop the connection's remaining body.
    const chunks: Buffer[] = [];
    let size = 0;
    try {
      for await (const chunk of res.body) {
        const b = chunk as Buffer;
        chunks.push(b);
        size += b.length;
        if (size >= RESPONSE_EXCERPT_BYTES) break;
      }
    } finally {
      res.body.destroy();
    }
    const text = Buffer.concat(chunks).subarray(0, RESPONSE_EXCERPT_BYTES).toString('utf8');
    const ok = res.statusCode >= 200 && res.statusCode < 300;
    const note =
      res.statusCode >= 300 && res.statusCode < 400
        ? `Redirect not followed${res.headers.location ? ` (location: ${String(res.headers.location).slice(0, 200)})` : ''}. `
        : '';
    return { ok, status: res.statusCode, response: note + text, timeMs: elapsed() };
  } catch (e) {
    const err = e as Error & { code?: string; cause?: Error };
    const timedOut = ac.signal.aborted || /^UND_ERR_(HEADERS|BODY|CONNECT)_TIMEOUT$/.test(err.code ?? err.cause?.['code' as never] ?? '');
    const msg = timedOut ? `No response: timed out after ${timeoutMs} ms` : `No response: ${err.cause?.message ?? err.message}`;
    return { ok: false, status: null, response: msg.slice(0, RESPONSE_EXCERPT_BYTES), timeMs: elapsed() };
  } finally {
    clearTimeout(timer);
  }
}

// ---- Fan-out (the event sink) ----------------------------------------------------------------

function deliveryBody(webhookId: string, deliveryId: string, event: { id: string; type: string; companyId: string; createdAt: string; data: unknown }): string {
  return JSON.stringify({
    webhook_id: webhookId,
    event_id: event.id,
    event_delivery_id: deliveryId,
    type: event.type,
    timestamp: event.createdAt,
    company_id: event.companyId,
    data: event.data,
  });
}

/** Creates the first attempt (and its job) for every enabled webhook of the company subscribed to the event. */
export async function fanOut(tx: Tx, event: RecordedEvent): Promise<void> {
  const hooks = await listEnabledWebhooks(tx, event.companyId);
  for (const h of hooks) {
    if (!(JSON.parse(h.allowed_events) as string[]).includes(event.type)) continue;
    const id = newId();
    const now = event.createdAt;
    await insertFirstAttempt(tx, {
      id,
      chain_id: id,
      webhook_id: h.id,
      company_id: event.companyId,
      event_id: event.id,
      event_type: event.type,
      attempt: 1,
      status: 'PENDING',
      endpoint: h.endpoint,
      payload: deliveryBody(h.id, id, event),
      response: null,
      response_status: null,
      response_time_ms: null,
      due_at: now,
      sent_at: null,
      created_at: now,
      updated_at: now,
    });
    await enqueue(tx, { kind: DELIVER, payload: { deliveryId: id }, subjectId: h.id, maxAttempts: 20 });
  }
}

// ---- The delivery job ------------------------------------------------------------------------

/** A webhook secret as it signs: the secret itself and its HMAC key. */
interface SigningKey {
  secret: string;
  key: Buffer;
}

/**
 * The secrets that sign now: the current one and, during a roll-secret transition, the previous
 * one. `unseal` gives a stored (encrypted) secret's signing key.
 */
function signingSecrets(
  unseal: (sealed: string) => SigningKey,
  w: Pick<WebhooksTable, 'secret' | 'old_secret' | 'old_secret_expired_at'>,
  now = Date.now(),
): { current: SigningKey; previous: SigningKey | null } {
  const current = unseal(w.secret);
  const previous = w.old_secret && w.old_secret_expired_at && Date.parse(w.old_secret_expired_at) > now ? unseal(w.old_secret) : null;
  return { current, previous };
}

export const deliverJob = (app: AppContext): JobKind<'webhook.deliver'> => {
  const settings = webhookSettings(app.config.webhooks?.env ?? {});
  const production = app.config.production;
  const agent = guardedAgent(production, settings.timeoutMs);
  const db = app.database.db;
  // A burst of deliveries goes to few webhooks: each endpoint's form is checked, and each stored
  // secret decrypted and decoded, once, not per attempt. A rolled secret is another stored value,
  // an updated endpoint another string.
  const checked = memoized((endpoint: string) => endpointProblem(endpoint, production));
  const unseal = memoized((sealed: string): SigningKey => {
    const secret = app.secrets.decrypt(sealed);
    return { secret, key: hmacKey(secret) };
  });
  // The attempts of the jobs claimed together are read together: one query for a burst.
  const attempts = new Coalescer<string, AttemptWithWebhook | undefined>(async (_key, ids) => {
    const rows = new Map((await readAttemptsWithWebhook(db, ids)).map((r) => [r.id, r]));
    return ids.map((id) => rows.get(id));
  }, true);
  return {
    transactional: false,
    io: true,
    async run(_db, job) {
      const d = await attempts.call('', job.payload.deliveryId);
      if (!d || d.status !== 'PENDING') return; // webhook deleted (cascade) or chain settled
      if (d.sent_at) return followUp(d); // recorded before a crash; the job did not learn of it
      if (Date.parse(d.due_at) > Date.now() + 50) return { rescheduleAt: new Date(d.due_at) };
      // The webhook's columns, read with the attempt under w_ names. The attempt is used as read,
      // not copied without them: an object rest is a slow copy on this path.
      const w = {
        endpoint: d.w_endpoint,
        is_enabled: d.w_is_enabled,
        secret: d.w_secret,
        old_secret: d.w_old_secret,
        old_secret_expired_at: d.w_old_secret_expired_at,
      };
      if (!w.is_enabled) {
        const now = new Date().toISOString();
        await db.transaction().execute(async (tx) => {
          await lockWebhooksShared(tx, [d.webhook_id]);
          await markAttemptNotSent(tx, d.id, 'Not sent: the webhook is disabled', now);
          await settleChain(tx, d.chain_id, 'FAILED', now);
        });
        deliveryOutcome(app, 'not_sent');
        return;
      }
      const sentAt = new Date();
      const ts = Math.floor(sentAt.getTime() / 1000);
      const { current, previous } = signingSecrets(unseal, w, sentAt.getTime());
      const msgId = d.event_id;
      const signatures = [sign(current.key, msgId, ts, d.payload), ...(previous ? [sign(previous.key, msgId, ts, d.payload)] : [])];
      const headers: Record<string, string> = {
        'content-type': 'application/json',
        'user-agent': 'Slipway-Webhooks/1',
        'webhook-id': msgId,
        'webhook-timestamp': String(ts),
        'webhook-signature': signatures.join(' '),
      };
      if (settings.plainSecretHeader) headers[`${app.config.brandPrefix}-signature`] = current.secret;
      // The receiver may continue the trace of the request that caused the event (W3C Trace Context).
      const traceparent = activeTraceparent();
      if (traceparent) headers.traceparent = traceparent;
      // The endpoint of the webhook now (it may have been updated since the attempt was created).
      const problem = checked(w.endpoint);
      const result: SendResult = problem
        ? { ok: false, status: null, response: `Not sent: ${problem}`, timeMs: 0 }
        : await post(agent, settings.timeoutMs, w.endpoint, headers, d.payload);
      deliveryOutcome(app, problem ? 'not_sent' : result.ok ? 'success' : result.status === null ? 'network_error' : 'http_error');
      const now = new Date().toISOString();
      const last = d.attempt >= MAX_ATTEMPTS;
      // Recorded in the transaction that completes the job (shared by the jobs completed together).
      return {
        record: async (tx) => {
          // A first attempt is its chain's only row: the outcome settles it in the same statement.
          const settles = result.ok || last ? (result.ok ? 'SUCCESS' : 'FAILED') : undefined;
          const sent: Sent = {
            id: d.id,
            webhook_id: d.webhook_id,
            endpoint: w.endpoint,
            sent_at: sentAt.toISOString(),
            response_status: result.status,
            response: result.response,
            response_time_ms: result.timeMs,
            updated_at: now,
            status: settles && d.attempt === 1 ? settles : null,
          };
          if (!(await recordSent(tx, sent))) return; // deleted meanwhile, or another worker recorded it
          if (settles) return d.attempt === 1 ? undefined : settleChain(tx, d.chain_id, settles, now);
          const id = newId();
          const due = new Date(Date.now() + retryDelayMs(d.attempt, settings.retryScale)).toISOString();
          const body = JSON.parse(d.payload) as Record<string, unknown>;
          const next: WebhookDeliveriesTable = {
            id,
            chain_id: d.chain_id,
            webhook_id: d.webhook_id,
            company_id: d.company_id,
            event_id: d.event_id,
            event_type: d.event_type,
            attempt: d.attempt + 1,
            status: 'PENDING',
            endpoint: w.endpoint,
            payload: JSON.stringify({ ...body, event_delivery_id: id }),
            response: null,
            response_status: null,
            response_time_ms: null,
            due_at: due,
            sent_at: null,
            created_at: now,
            updated_at: now,
          };
          await insertAttempt(tx, next);
          return { rescheduleAt: new Date(next.due_at), payload: { deliveryId: next.id } };
        },
      };
    },
  };

  async function followUp(d: WebhookDeliveriesTable) {
    const n = await findAttempt(db, d.chain_id, d.attempt + 1);
    if (n && n.status === 'PENDING') return { rescheduleAt: new Date(n.due_at), payload: { deliveryId: n.id } };
    return undefined;
  }
};
