// Docker registry credentials: name, provider, username and a secret (password or token) used to
// pull private images. The secret is sealed with app.secrets at rest and never leaves the server
// through the API (the contract returns no secret field).
import type { CallContext } from '../../shared/context.js';
import { notFound } from '../../shared/errors.js';
import { newId } from '../../shared/ids.js';
import type { Page } from '../../shared/pagination.js';
import {
  deleteRegistryRow,
  findRegistry,
  findRegistrySummary,
  insertRegistry,
  listRegistriesPage,
  updateRegistryColumns,
  type DockerRegistriesTable,
} from './storage.js';

type RegistryKind = 'gcr' | 'ecr' | 'dockerHub' | 'github' | 'gitlab' | 'digitalOcean' | 'custom';

const view = (r: DockerRegistriesTable) => ({
  id: r.id,
  company_id: r.company_id,
  name: r.name,
  registry: r.registry as RegistryKind,
  username: r.username,
  created_at: r.created_at,
  updated_at: r.updated_at,
});

export async function listRegistries({ tx, companyId, scope }: CallContext, page: Page) {
  const r = await listRegistriesPage(tx, companyId, scope, page);
  return { ...r, data: r.data.map((d) => ({ ...d, registry: d.registry as RegistryKind })) };
}

async function find({ tx, companyId }: CallContext, id: string): Promise<DockerRegistriesTable> {
  const r = await findRegistry(tx, companyId, id);
  if (!r) throw notFound('Docker registry');
  return r;
}

/** The registry's view of a credential (reference checks of `docker_registry_credential_id`). */
export async function registrySummary({ tx, companyId }: CallContext, id: string) {
  return findRegistrySummary(tx, companyId, id);
}

export async function getRegistry(ctx: CallContext, id: string) {
  return view(await find(ctx, id));
}

interface RegistryInput {
  name: string;
  registry?: RegistryKind;
  username: string;
  secret: string;
}

export async function createRegistry({ tx, app, companyId }: CallContext, input: RegistryInput) {
  const now = new Date().toISOString();
  const row: DockerRegistriesTable = {
    id: newId(),
    company_id: companyId,
    name: input.name,
    registry: input.registry ?? 'dockerHub',
    username: input.username,
    secret: app.secrets.encrypt(input.secret),
    created_at: now,
    updated_at: now,
  };
  await insertRegistry(tx, row);
  return view(row);
}

export async function updateRegistry(ctx: CallContext, id: string, input: Partial<RegistryInput>) {
  const { tx, app } = ctx;
  const r = await find(ctx, id);
  const set: Partial<DockerRegistriesTable> = {};
  if (input.name !== undefined) set.name = input.name;
  if (input.registry !== undefined) set.registry = input.registry;
  if (input.username !== undefined) set.username = input.username;
  if (input.secret !== undefined) set.secret = app.secrets.encrypt(input.secret);
  // An empty body changes nothing (and keeps updated_at).
  if (!Object.keys(set).length) return view(r);
  set.updated_at = new Date().toISOString();
  await updateRegistryColumns(tx, id, set);
  return view({ ...r, ...set });
}

export async function deleteRegistry(ctx: CallContext, id: string) {
  await find(ctx, id);
  await deleteRegistryRow(ctx.tx, id);
  return { message: 'Docker registry deleted' };
}

/**
 * The login of a credential for pulling an image (a runtime driver, once per pull): its secret
 * unsealed, to be handed to the engine and never logged; undefined when it is gone.
 */
export async function registryLogin({ tx, app, companyId }: CallContext, id: string) {
  const r = await findRegistry(tx, companyId, id);
  if (!r) return undefined;
  return { name: r.name, registry: r.registry as RegistryKind, username: r.username, password: app.secrets.decrypt(r.secret) };
}
