// Webhooks: a company's endpoints for event notifications (at most 10), their signing secrets
// (rolled with an optional transition during which the old secret also signs) and the history of
// delivery attempts.
import type { AppContext, CallContext } from '../../shared/context.js';
import { badRequest, notFound } from '../../shared/errors.js';
import type { EventType } from '../../shared/events.js';
import { newId } from '../../shared/ids.js';
import { refuseIfTaken } from '../../shared/naming.js';
import { cancelJobs } from '../../shared/jobs.js';
import type { Page } from '../../shared/pagination.js';
import { DELIVER, endpointProblem, newSecret } from './delivery.js';
import {
  countWebhooks,
  deleteWebhookWithDeliveries,
  findDelivery,
  findWebhook,
  insertWebhook,
  listDeliveriesPage,
  listWebhooksPage,
  lockWebhookForDeletion,
  updateWebhookColumns,
  type WebhookDeliveriesTable,
  type WebhooksTable,
} from './storage.js';

const MAX_WEBHOOKS_PER_COMPANY = 10;

function webhookView(app: AppContext, w: WebhooksTable, now = Date.now()) {
  const transition = w.old_secret && w.old_secret_expired_at && Date.parse(w.old_secret_expired_at) > now;
  return {
    id: w.id,
    company_id: w.company_id,
    is_enabled: w.is_enabled === 1,
    allowed_events: JSON.parse(w.allowed_events) as EventType[],
    secret: app.secrets.decrypt(w.secret),
    old_secret: transition ? app.secrets.decrypt(w.old_secret!) : null,
    old_secret_expired_at: transition ? w.old_secret_expired_at : null,
    endpoint: w.endpoint,
    description: w.description ?? '',
    created_by: w.created_by,
    updated_by: w.updated_by,
    created_at: w.created_at,
    updated_at: w.updated_at,
  };
}

function deliveryView(d: WebhookDeliveriesTable) {
  return {
    id: d.id,
    webhook_id: d.webhook_id,
    event_id: d.event_id,
    event_type: d.event_type,
    status: d.status,
    endpoint: d.endpoint,
    payload: d.payload,
    response: d.response,
    response_status: d.response_status,
    response_time_ms: d.response_time_ms,
    sent_at: d.sent_at,
    created_at: d.created_at,
    updated_at: d.updated_at,
  };
}

function checkEndpoint(app: AppContext, endpoint: string) {
  const problem = endpointProblem(endpoint, app.config.production);
  if (problem) throw badRequest(problem);
}

const uniqueEvents = (e: readonly EventType[]) => JSON.stringify([...new Set(e)]);

/** Who changes a webhook: the API key (webhooks are managed through the API only). */
function by({ actor }: CallContext): string {
  if (!actor) throw new Error('webhooks are created and changed by API keys only');
  return actor;
}

async function find({ tx, companyId }: CallContext, id: string): Promise<WebhooksTable> {
  const w = await findWebhook(tx, companyId, id);
  if (!w) throw notFound('Webhook');
  return w;
}

export async function listWebhooks({ tx, app, companyId, scope }: CallContext, page: Page) {
  const { count, rows } = await listWebhooksPage(tx, companyId, scope, page);
  return { data: rows.map((w) => webhookView(app, w)), total: Math.min(count, 10000), offset: page.offset, limit: page.limit };
}

export async function getWebhook(ctx: CallContext, id: string) {
  return webhookView(ctx.app, await find(ctx, id));
}

export async function createWebhook(ctx: CallContext, body: { allowed_events: EventType[]; endpoint: string; description?: string }) {
  const { tx, app, companyId } = ctx;
  checkEndpoint(app, body.endpoint);
  // The limit holds under concurrent creates.
  await refuseIfTaken(
    tx,
    `webhooks:${companyId}`,
    async () => (await countWebhooks(tx, companyId)) >= MAX_WEBHOOKS_PER_COMPANY,
    () => badRequest(`A company can have at most ${MAX_WEBHOOKS_PER_COMPANY} webhooks; delete one first`),
  );
  const now = new Date().toISOString();
  const row: WebhooksTable = {
    id: newId(),
    company_id: companyId,
    endpoint: body.endpoint,
    description: body.description ?? null,
    allowed_events: uniqueEvents(body.allowed_events),
    is_enabled: 1,
    secret: app.secrets.encrypt(newSecret()),
    old_secret: null,
    old_secret_expired_at: null,
    created_by: by(ctx),
    updated_by: null,
    created_at: now,
    updated_at: now,
  };
  await insertWebhook(tx, row);
  return webhookView(app, row);
}

export async function updateWebhook(ctx: CallContext, id: string, body: { allowed_events?: EventType[]; endpoint?: string; description?: string | null }) {
  const { tx, app } = ctx;
  const w = await find(ctx, id);
  if (body.endpoint !== undefined) checkEndpoint(app, body.endpoint);
  const next: WebhooksTable = {
    ...w,
    endpoint: body.endpoint ?? w.endpoint,
    allowed_events: body.allowed_events ? uniqueEvents(body.allowed_events) : w.allowed_events,
    description: body.description === undefined ? w.description : body.description,
    updated_by: by(ctx),
    updated_at: new Date().toISOString(),
  };
  await updateWebhookColumns(tx, id, {
    endpoint: next.endpoint,
    allowed_events: next.allowed_events,
    description: next.description,
    updated_by: next.updated_by,
    updated_at: next.updated_at,
  });
  return webhookView(app, next);
}

/** Deleting a webhook cancels its queued deliveries and removes its delivery history. */
export async function deleteWebhook(ctx: CallContext, id: string) {
  const { tx } = ctx;
  await find(ctx, id);
  // Before any job or attempt row: the attempts being recorded are written first (webhookLock in storage.ts).
  await lockWebhookForDeletion(tx, id);
  await cancelJobs(tx, id, DELIVER);
  await deleteWebhookWithDeliveries(tx, id);
  return { message: 'Webhook deleted' };
}

export async function toggleWebhook(ctx: CallContext, id: string) {
  const { tx, app } = ctx;
  const w = await find(ctx, id);
  const next = { ...w, is_enabled: w.is_enabled ? 0 : 1, updated_by: by(ctx), updated_at: new Date().toISOString() };
  await updateWebhookColumns(tx, id, { is_enabled: next.is_enabled, updated_by: next.updated_by, updated_at: next.updated_at });
  return webhookView(app, next);
}

/** New secret now; with `expire_in_hours` > 0 the previous one keeps signing (second signature) until then (default 0). */
export async function rollSecret(ctx: CallContext, id: string, input: { expire_in_hours?: number } = {}) {
  const { tx, app } = ctx;
  const expireInHours = input.expire_in_hours ?? 0;
  const w = await find(ctx, id);
  const now = new Date();
  const keep = expireInHours > 0;
  const next: WebhooksTable = {
    ...w,
    secret: app.secrets.encrypt(newSecret()),
    old_secret: keep ? w.secret : null,
    old_secret_expired_at: keep ? new Date(now.getTime() + expireInHours * 3_600_000).toISOString() : null,
    updated_by: by(ctx),
    updated_at: now.toISOString(),
  };
  await updateWebhookColumns(tx, id, {
    secret: next.secret,
    old_secret: next.old_secret,
    old_secret_expired_at: next.old_secret_expired_at,
    updated_by: next.updated_by,
    updated_at: next.updated_at,
  });
  return webhookView(app, next, now.getTime());
}

/** Delivery attempts, newest first. */
export async function listDeliveries(ctx: CallContext, webhookId: string, page: Page) {
  const { tx } = ctx;
  await find(ctx, webhookId);
  const { count, rows } = await listDeliveriesPage(tx, webhookId, page);
  return { data: rows.map(deliveryView), total: Math.min(count, 10000), offset: page.offset, limit: page.limit };
}

export async function getDelivery(ctx: CallContext, webhookId: string, id: string) {
  const { tx } = ctx;
  await find(ctx, webhookId);
  const d = await findDelivery(tx, webhookId, id);
  if (!d) throw notFound('Delivery');
  return deliveryView(d);
}
