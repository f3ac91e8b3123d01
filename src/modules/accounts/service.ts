// Companies and their users (operator-managed), the first-start bootstrap and the full reset.
import { systemCall, type AppContext, type CallContext } from '../../shared/context.js';
import { ALL_TABLES, type Tx } from '../../shared/db/index.js';
import type { CompaniesTable } from '../../shared/db/schema.js';
import { badRequest, notFound } from '../../shared/errors.js';
import { newId } from '../../shared/ids.js';
import { ROLE_BY_NAME } from '../../shared/auth/rbac.js';
import { createKey } from '../api-keys/index.js';
import {
  claimBootstrap,
  deleteAllRows,
  findCompanyRow,
  insertCompany,
  insertUser,
  listAllCompanies,
  listCompanyUsers,
  updateCompanyStatus,
} from './storage.js';

export type CompanyStatus = CompaniesTable['status'];

export async function createCompany(tx: Tx, name: string): Promise<CompaniesTable> {
  if (!name.trim()) throw badRequest('name is required');
  const now = new Date().toISOString();
  const row: CompaniesTable = { id: newId(), name, status: 'active', created_at: now, updated_at: now };
  await insertCompany(tx, row);
  return row;
}

/** Every company, oldest first (the operator surface). */
export async function listCompanies(tx: Tx): Promise<CompaniesTable[]> {
  return listAllCompanies(tx);
}

export async function findCompany(tx: Tx, id: string): Promise<CompaniesTable> {
  const c = await findCompanyRow(tx, id);
  if (!c) throw notFound('Company');
  return c;
}

export async function setCompanyStatus(app: AppContext, tx: Tx, id: string, status: CompanyStatus) {
  const c = await findCompany(tx, id);
  await app.keys.changing(tx);
  const updated_at = new Date().toISOString();
  await updateCompanyStatus(tx, id, status, updated_at);
  return { ...c, status, updated_at };
}

export async function createUser(tx: Tx, companyId: string, u: { email: string; full_name?: string; image?: string }) {
  await findCompany(tx, companyId);
  if (!/^[^@\s]+@[^@\s]+\.[a-z]{2,}$/i.test(u.email)) throw badRequest('email is not a valid address');
  const row = {
    id: newId(),
    company_id: companyId,
    email: u.email,
    full_name: u.full_name ?? u.email.split('@')[0]!,
    image: u.image ?? `https://www.gravatar.com/avatar/${Buffer.from(u.email).toString('hex').slice(0, 32)}`,
    created_at: new Date().toISOString(),
  };
  await insertUser(tx, row);
  return row;
}

export async function listUsers({ tx, companyId }: CallContext) {
  return { data: await listCompanyUsers(tx, companyId) };
}

/** A key made by the operator (or the bootstrap) in company `companyId`, with a role named by its name. */
export async function createKeyWithRole(
  app: AppContext,
  tx: Tx,
  companyId: string,
  spec: {
    name: string;
    role?: string;
    token?: string;
    expired_at?: string;
    capabilities?: { permission: string; id_resource?: string | null }[];
    source?: 'DASHBOARD' | 'CLI';
  },
) {
  await findCompany(tx, companyId);
  const roleIds: string[] = [];
  if (spec.role) {
    const role = ROLE_BY_NAME.get(spec.role.toLowerCase());
    if (!role) throw badRequest(`Unknown role "${spec.role}" (one of: Company Admin, Company Developer, Company Billing, Company Viewer)`);
    roleIds.push(role.id);
  }
  return createKey(systemCall(app, tx, companyId), {
    name: spec.name,
    role_ids: roleIds,
    capabilities: spec.capabilities,
    token: spec.token,
    expired_at: spec.expired_at,
    source: spec.source ?? 'DASHBOARD',
  });
}

/** A new company with its first key (role Company Admin unless another is named); the token is shown once. */
export async function createCompanyWithKey(app: AppContext, tx: Tx, name: string, role = 'Company Admin', keyName = 'admin') {
  const company = await createCompany(tx, name);
  const key = await createKeyWithRole(app, tx, company.id, { name: keyName, role });
  return { company, api_key: { id: key.id, token: key.token } };
}

export interface BootstrapResult {
  created: boolean;
  companyId?: string;
  token?: string;
}

/** On first start: one company, one admin user and one Company Admin key (token printed once). */
export async function bootstrap(app: AppContext): Promise<BootstrapResult> {
  return app.database.db.transaction().execute(async (tx) => {
    if (!(await claimBootstrap(tx, new Date().toISOString()))) return { created: false };
    const company = await createCompany(tx, 'Default Company');
    await createUser(tx, company.id, { email: 'admin@slipway.local', full_name: 'Slipway Admin' });
    const key = await createKeyWithRole(app, tx, company.id, { name: 'bootstrap admin', role: 'Company Admin', token: app.config.bootstrapToken });
    return { created: true, companyId: company.id, token: key.token };
  });
}

/** Removes every row of every table, then bootstraps again. */
export async function resetAll(app: AppContext, extraTables: readonly string[] = []): Promise<BootstrapResult> {
  await app.database.db.transaction().execute(async (tx) => {
    await app.keys.changing(tx);
    await deleteAllRows(tx, [...extraTables, ...ALL_TABLES]);
  });
  await app.keys.announced();
  return bootstrap(app);
}
