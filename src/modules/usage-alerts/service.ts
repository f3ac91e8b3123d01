// Usage alerts: a USD spending limit for the company or one project, up to 10 threshold
// percentages and one or more e-mail recipients. Each threshold fires at most once per billing
// period (the calendar month, UTC) and is armed again when the next period starts.
//
// Slipway has no billing or usage metering: nothing calls recordUsage, so thresholds never fire
// and `last_fired_at` stays null. recordUsage is the evaluation a future usage source would call.
import type { CallContext } from '../../shared/context.js';
import type { Tx } from '../../shared/db/index.js';
import { badRequest, notFound } from '../../shared/errors.js';
import { newId } from '../../shared/ids.js';
import type { Page } from '../../shared/pagination.js';
import { requireProject } from '../projects/index.js';
import {
  deleteAlertWithTriggers,
  deleteTriggersOf,
  findAlert,
  insertAlertIfScopeFree,
  insertTriggerRows,
  listAlertsPage,
  listTriggers,
  markTriggersFired,
  updateAlertColumns,
  type UsageAlertTriggersTable,
  type UsageAlertsTable,
} from './storage.js';

const MAX_TRIGGERS = 10;

function view(a: UsageAlertsTable, triggers: UsageAlertTriggersTable[]) {
  return {
    id: a.id,
    company_id: a.company_id,
    project_id: a.project_id,
    limit_usd: Number(a.limit_usd),
    emails: JSON.parse(a.emails) as string[],
    triggers: triggers
      .filter((t) => t.alert_id === a.id)
      .sort((x, y) => x.percentage - y.percentage)
      .map((t) => ({ id: t.id, percentage: t.percentage, last_fired_at: t.last_fired_at })),
    created_at: a.created_at,
    updated_at: a.updated_at,
  };
}

async function find({ tx, companyId }: CallContext, id: string): Promise<UsageAlertsTable> {
  const a = await findAlert(tx, companyId, id);
  if (!a) throw notFound('Usage alert config');
  return a;
}

function checkEmails(emails: string[]) {
  const seen = new Set<string>();
  for (const e of emails) {
    const k = e.toLowerCase();
    if (seen.has(k)) throw badRequest(`E-mail recipient "${e}" is listed more than once`);
    seen.add(k);
  }
}

function checkTriggers(triggers: { percentage: number }[]) {
  // The contract bounds the list (1..10) and each percentage (1..100); this repeats the limit for
  // callers that bypass validation and rejects duplicates, which could never fire separately.
  if (triggers.length > MAX_TRIGGERS) throw badRequest(`At most ${MAX_TRIGGERS} thresholds per usage alert`);
  const seen = new Set<number>();
  for (const t of triggers) {
    if (seen.has(t.percentage)) throw badRequest(`Threshold ${t.percentage}% is listed more than once`);
    seen.add(t.percentage);
  }
}

async function insertTriggers(tx: Tx, alertId: string, triggers: { percentage: number }[]) {
  const rows: UsageAlertTriggersTable[] = triggers.map((t) => ({
    id: newId(),
    alert_id: alertId,
    percentage: t.percentage,
    fired_period: null,
    last_fired_at: null,
  }));
  await insertTriggerRows(tx, rows);
  return rows;
}

/** The company's configs, optionally only the one of project `projectId`. */
export async function listAlerts({ tx, companyId, scope }: CallContext, page: Page, projectId: string | undefined) {
  const r = await listAlertsPage(tx, companyId, projectId, scope, page);
  const triggers = await listTriggers(
    tx,
    r.data.map((a) => a.id),
  );
  return { ...r, data: r.data.map((a) => view(a, triggers)) };
}

export async function getAlert(ctx: CallContext, id: string) {
  const a = await find(ctx, id);
  return view(a, await listTriggers(ctx.tx, [id]));
}

interface CreateAlertInput {
  project_id?: string | null;
  limit_usd: number;
  emails: string[];
  triggers: { percentage: number }[];
}

export async function createAlert(ctx: CallContext, input: CreateAlertInput) {
  const { tx, companyId } = ctx;
  const projectId = input.project_id ?? null;
  if (projectId) await requireProject(ctx, projectId);
  checkEmails(input.emails);
  checkTriggers(input.triggers);
  const now = new Date().toISOString();
  const row: UsageAlertsTable = {
    id: newId(),
    company_id: companyId,
    project_id: projectId,
    scope_key: projectId ?? '',
    limit_usd: input.limit_usd,
    emails: JSON.stringify(input.emails),
    created_at: now,
    updated_at: now,
  };
  // The unique (company_id, scope_key) index settles concurrent creations: nothing inserted = taken.
  if (!(await insertAlertIfScopeFree(tx, row))) {
    throw badRequest(
      projectId
        ? `Project ${projectId} already has a usage alert config; update it instead`
        : 'The company already has a company-wide usage alert config; update it instead',
    );
  }
  return view(row, await insertTriggers(tx, row.id, input.triggers));
}

interface UpdateAlertInput {
  limit_usd?: number;
  emails?: string[];
  triggers?: { percentage: number }[];
}

/** Partial update; the project scope is immutable. New triggers replace all and reset the fired state. */
export async function updateAlert(ctx: CallContext, id: string, input: UpdateAlertInput) {
  const { tx } = ctx;
  const a = await find(ctx, id);
  const set: Partial<UsageAlertsTable> = {};
  if (input.limit_usd !== undefined) set.limit_usd = input.limit_usd;
  if (input.emails !== undefined) {
    checkEmails(input.emails);
    set.emails = JSON.stringify(input.emails);
  }
  if (input.triggers !== undefined) {
    checkTriggers(input.triggers);
    await deleteTriggersOf(tx, id);
    await insertTriggers(tx, id, input.triggers);
  }
  if (Object.keys(set).length || input.triggers !== undefined) {
    set.updated_at = new Date().toISOString();
    await updateAlertColumns(tx, id, set);
  }
  return view({ ...a, ...set }, await listTriggers(tx, [id]));
}

export async function deleteAlert(ctx: CallContext, id: string): Promise<void> {
  const { tx } = ctx;
  await find(ctx, id);
  await deleteAlertWithTriggers(tx, id);
}

/** The billing period of an instant: its calendar month in UTC, `YYYY-MM`. */
export const billingPeriod = (at: Date) => at.toISOString().slice(0, 7);

/**
 * Evaluates one config against the spend of the current billing period. The highest threshold the
 * spend has reached fires if it has not fired in this period; lower reached thresholds are marked
 * fired with it (one e-mail per crossing, not one per threshold). Returns the fired trigger, if any.
 * Delivery of the e-mail is not implemented (no usage data and no mailer exist).
 */
export async function recordUsage(ctx: CallContext, id: string, spentUsd: number, now = new Date()) {
  const { tx } = ctx;
  const a = await find(ctx, id);
  const period = billingPeriod(now);
  const reached = (await listTriggers(tx, [id]))
    .filter((t) => (spentUsd * 100) / Number(a.limit_usd) >= t.percentage)
    .sort((x, y) => y.percentage - x.percentage);
  const top = reached[0];
  if (!top || top.fired_period === period) return null;
  const at = now.toISOString();
  const ids = reached.filter((t) => t.fired_period !== period).map((t) => t.id);
  await markTriggersFired(tx, ids, period, at);
  return { id: top.id, percentage: top.percentage, last_fired_at: at };
}
