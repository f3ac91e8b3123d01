// Git provider webhooks: each company has one secret, which every provider's webhook of that
// company is set up with, and one URL per provider that names the company
// (`/hooks/git/<provider>/<company id>`; no API key: the signature or token authenticates). A
// delivery that proves the secret is recorded once per delivery id and acted on (push.ts);
// anything else changes nothing.
import { randomBytes } from 'node:crypto';
import { systemCall, type AppContext, type CallContext } from '../../shared/context.js';
import { newId } from '../../shared/ids.js';
import type { Page } from '../../shared/pagination.js';
import { withChangedFiles } from './changes.js';
import { deliveryOf, verify, type GitEvent, type Provider } from './providers.js';
import { actOn, type Outcome } from './push.js';
import type { DeliveryResult } from './schemas.js';
import {
  claimDelivery,
  deliveryKnown,
  findSecret,
  listDeliveriesPage,
  recordDelivery,
  trimDeliveries,
  upsertSecret,
  type GitDeliveriesTable,
} from './storage.js';

export const HOOK_PATH = '/hooks/git';
/** The actions that make a delivery `deployed` (skipped and refused ones do not). */
const DEPLOYED = new Set(['deployed', 'preview', 'previewAppCreated', 'previewAppDeployed', 'previewAppDeleted']);
const newSecret = () => `ghsec_${randomBytes(24).toString('base64url')}`;

function secretView(app: AppContext, companyId: string, row: { secret: string; created_at: string; updated_at: string }) {
  const url = (p: Provider) => `${app.baseUrl}${HOOK_PATH}/${p}/${companyId}`;
  return {
    secret: app.secrets.decrypt(row.secret),
    webhook_urls: { github: url('github'), gitlab: url('gitlab'), bitbucket: url('bitbucket'), gitea: url('gitea') },
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}

/** GET /git/webhook-secret: the company's secret and webhook URLs (the secret is made on the first read). */
export async function getSecret(ctx: CallContext) {
  const { app, tx, companyId } = ctx;
  const row = await findSecret(tx, companyId);
  if (row) return secretView(app, companyId, row);
  const now = new Date().toISOString();
  return secretView(
    app,
    companyId,
    await upsertSecret(tx, { company_id: companyId, secret: app.secrets.encrypt(newSecret()), created_at: now, updated_at: now }),
  );
}

/** POST /git/webhook-secret/rotate: a new secret; deliveries signed with the old one are refused from now on. */
export async function rotateSecret(ctx: CallContext) {
  const { app, tx, companyId } = ctx;
  const now = new Date().toISOString();
  return secretView(
    app,
    companyId,
    await upsertSecret(tx, { company_id: companyId, secret: app.secrets.encrypt(newSecret()), created_at: now, updated_at: now }),
  );
}

const deliveryView = (d: GitDeliveriesTable) => ({
  id: d.id,
  provider: d.provider as Provider | 'poll',
  event: d.event,
  delivery_id: d.delivery_id,
  result: d.result as DeliveryResult,
  message: d.message,
  triggered: JSON.parse(d.triggered) as Outcome['triggered'],
  created_at: d.created_at,
});

/** GET /git/deliveries: the company's deliveries, newest first (those that concerned `service_id`). */
export async function listDeliveries(ctx: CallContext, serviceId: string | undefined, page: Page) {
  const res = await listDeliveriesPage(ctx.tx, ctx.companyId, serviceId, page);
  return { ...res, data: res.data.map(deliveryView) };
}

/** The company's secret in clear, or undefined when it has none yet. */
export async function companySecret(app: AppContext, companyId: string): Promise<string | undefined> {
  const row = await findSecret(app.database.db, companyId);
  return row && app.secrets.decrypt(row.secret);
}

export interface Received {
  provider: Provider | 'poll';
  event: string;
  deliveryId: string;
  events: GitEvent[];
}

/**
 * Records a delivery and acts on it, in one transaction: a delivery id received before is
 * `duplicate` and does nothing. The record says what it triggered, or why nothing.
 */
export async function receive(app: AppContext, companyId: string, r: Received): Promise<ReturnType<typeof deliveryView>> {
  const row: GitDeliveriesTable = {
    id: newId(),
    company_id: companyId,
    provider: r.provider,
    event: r.event.slice(0, 64),
    delivery_id: r.deliveryId.slice(0, 128),
    result: 'ignored',
    message: '',
    triggered: '[]',
    service_ids: '',
    created_at: new Date().toISOString(),
  };
  const duplicate = { ...row, result: 'duplicate', message: 'This delivery was received already; ignored' };
  // A redelivery is answered without reading the push's files, which may fetch the repository
  // (done before the transaction, so no fetch holds it open).
  if (await deliveryKnown(app.database.db, companyId, row.provider, row.delivery_id)) return deliveryView(duplicate);
  const events = await withChangedFiles(app, companyId, r.events);
  const d = await app.database.db.transaction().execute(async (tx) => {
    if (!(await claimDelivery(tx, row))) return duplicate;
    const out = await actOn(systemCall(app, tx, companyId), events);
    const done = {
      result: out.triggered.some((t) => DEPLOYED.has(t.action)) ? 'deployed' : 'ignored',
      message: (out.triggered.length
        ? out.triggered.map((t) => `${t.service_type} ${t.service_id}: ${t.action}${t.detail ? ` (${t.detail})` : ''}`)
        : out.notes
      ).join('; '),
      triggered: JSON.stringify(out.triggered),
      service_ids: out.triggered.map((t) => t.service_id).join(' '),
    };
    await recordDelivery(tx, row.id, done);
    await trimDeliveries(tx, companyId);
    return { ...row, ...done };
  });
  app.jobs.wake();
  return deliveryView(d);
}

/** The event name and delivery id of a provider delivery that proves the secret; undefined when it does not. */
export function authenticate(provider: Provider, headers: Record<string, string | string[] | undefined>, raw: Buffer, secret: string) {
  if (!verify(provider, headers, raw, secret)) return undefined;
  const { event, deliveryId } = deliveryOf(provider, headers);
  return { event, deliveryId: deliveryId ?? newId() };
}
