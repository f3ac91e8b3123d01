// Every string and integer a request body takes is bounded no wider than the PostgreSQL column it
// is stored in, and the same on create and update: a longer string or a larger integer would pass
// validation and fail the INSERT or UPDATE as a 500 (SQLite enforces neither). The served OpenAPI
// document gives every operation's body; a migrated database's information_schema gives the
// columns. A body field is checked against the column of the same name in the tables its operation
// writes; the lists below name the tables of each operation and the few fields stored under
// another name or not stored, so a new operation or field fails here until it is mapped and
// bounded. The two 500s that started this are tested directly as well.
import { describe, it, before } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import { skipUnless, GENEROUS, useServer } from '../helpers/server.js';
import { expectError, expectStatus } from '../helpers/util.js';
import { DEFAULT_CLUSTER } from '../databases/support.js';

const INT4_MAX = 2147483647;
const INT4_MIN = -2147483648;

/** The tables an operation's body lands in (by path, every method), first match wins; [] for none. */
const TABLES: Record<string, string[]> = {
  '/api-keys': ['api_keys'],
  '/api-keys/{id}': ['api_keys'],
  '/api-keys/{id}/rotate': [],
  '/projects': ['projects'],
  '/projects/{id}': ['projects'],
  '/projects/{id}/services': ['project_services'],
  '/applications': ['applications'],
  '/applications/{id}': ['applications'],
  '/applications/{id}/clone': ['applications'],
  '/applications/{id}/deployments': ['deployments'],
  '/applications/{id}/maintenance-mode': ['application_settings'],
  '/applications/{id}/ip-restriction': ['application_settings'],
  '/applications/{id}/tcp-proxies': ['application_tcp_proxies'],
  '/applications/{id}/private-ports': ['application_private_ports'],
  '/applications/{id}/processes': ['processes'],
  '/applications/{id}/processes/{process_id}': ['processes'],
  '/applications/{id}/volumes': ['volumes'],
  '/applications/{id}/volumes/{volume_id}': ['volumes'],
  '/applications/{id}/env-vars': ['env_vars'],
  '/applications/{id}/env-vars/{env_var_id}': ['env_vars'],
  '/applications/global-env-vars': ['global_env_vars'],
  '/applications/global-env-vars/{id}': ['global_env_vars'],
  '/applications/{id}/domains': ['domains'],
  '/applications/{id}/domains/{domain_id}': ['domains'],
  '/applications/{id}/preview-apps': ['pipeline_apps', 'applications'],
  '/static-sites': ['static_sites'],
  '/static-sites/{id}': ['static_sites'],
  '/static-sites/{id}/deployments': ['static_site_deployments'],
  '/static-sites/{id}/env-vars': ['static_site_env_vars'],
  '/static-sites/{id}/env-vars/{env_var_id}': ['static_site_env_vars'],
  '/static-sites/{id}/domains': ['domains'],
  '/static-sites/{id}/domains/{domain_id}': ['domains'],
  '/databases': ['databases'],
  '/databases/{id}': ['databases'],
  '/databases/{id}/reset-password': ['databases'],
  '/databases/{id}/ip-restriction': ['databases'],
  '/databases/{id}/internal-connections': ['database_internal_connections'],
  '/databases/{id}/backups': ['database_backups'],
  '/databases/{id}/backups/{backup_id}/restore': [],
  '/databases/{id}/external-backups': ['database_backups'],
  '/databases/{id}/external-backups/{backup_id}/restore': [],
  '/databases/{id}/backup-targets': ['database_backup_targets'],
  '/webhooks': ['webhooks'],
  '/webhooks/{id}': ['webhooks'],
  '/webhooks/{id}/roll-secret': [],
  '/docker-registries': ['docker_registries'],
  '/docker-registries/{id}': ['docker_registries'],
  '/usage-alerts': ['usage_alerts'],
  '/usage-alerts/{id}': ['usage_alerts'],
  '/pipelines': ['pipelines'],
  '/pipelines/{id}': ['pipelines'],
  '/pipelines/{id}/promote': [],
  '/pipelines/{id}/stages': ['pipeline_stages'],
  '/pipelines/{id}/stages/{stage_id}/apps': ['pipeline_apps'],
  '/pipelines/{id}/preview/enable': ['pipelines', 'pipeline_stages'],
  '/pipelines/{id}/preview': ['pipelines', 'pipeline_stages'],
  '/load-balancers': ['load_balancers'],
  '/load-balancers/{id}': ['load_balancers'],
  '/load-balancers/{id}/destinations': ['load_balancer_destinations'],
  '/load-balancers/{id}/destinations/{destination_id}': ['load_balancer_destinations'],
  '/load-balancers/{id}/domains': ['domains'],
  '/load-balancers/{id}/domains/{domain_id}': ['domains'],
  '/object-storage': ['object_storages'],
  '/object-storage/{id}': ['object_storages'],
  '/object-storage/{id}/rotate-credentials': [],
  '/object-storage/{id}/cors-policies': ['object_storage_cors'],
  '/object-storage/{id}/cors-policies/{cors_policy_id}': ['object_storage_cors'],
  '/object-storage/{id}/objects': [],
  '/object-storage/{id}/presign': [],
  '/git/credentials': ['git_repo_credentials'],
};

/**
 * Body fields whose column has another name (`table.column`), or that are not stored as given
 * (null: looked up, turned into something else, or stored item by item elsewhere). Keyed by
 * field, or by `METHOD path field` where the field means something else there.
 */
const FIELDS: Record<string, string | null> = {
  // Secrets are stored encrypted (text).
  db_password: 'databases.password_enc',
  new_password: 'databases.password_enc',
  'POST /databases/{id}/backup-targets access_key': 'database_backup_targets.access_key_enc',
  'POST /databases/{id}/backup-targets secret_key': 'database_backup_targets.secret_key_enc',
  custom_ssl_cert: 'domains.custom_cert',
  custom_ssl_key: 'domains.custom_key_enc',
  // A hostname (checked by the domains module against MAX_HOSTNAME), or the label of one.
  domain_name: 'domains.hostname',
  'PATCH /applications/{id}/domains/{domain_id} name': 'domains.hostname',
  'PATCH /static-sites/{id}/domains/{domain_id} name': 'domains.hostname',
  'PATCH /load-balancers/{id}/domains/{domain_id} name': 'domains.hostname',
  // Settings stored under prefixed names.
  'PUT /applications/{id}/maintenance-mode is_enabled': 'application_settings.maintenance_enabled',
  'PUT /applications/{id}/maintenance-mode page_url': 'application_settings.maintenance_page_url',
  'PUT /applications/{id}/ip-restriction type': 'application_settings.ip_type',
  'PUT /applications/{id}/ip-restriction is_enabled': 'application_settings.ip_enabled',
  'PUT /databases/{id}/ip-restriction type': 'databases.ip_type',
  'PUT /databases/{id}/ip-restriction is_enabled': 'databases.ip_enabled',
  'POST /databases/{id}/external-backups backup_target_id': 'database_backups.target_id',
  'POST /applications/{id}/deployments docker_image': 'deployments.docker_image_url',
  'POST /pipelines/{id}/stages insert_before': 'pipeline_stages.position',
  // Durations turned into a deadline (a timestamp column).
  old_token_ttl_hours: null,
  expire_in_hours: null,
  old_keys_ttl_hours: null,
  // Stored as toISOString() (24 characters, 27 beyond the year 9999).
  expired_at: null,
  // Ids of other resources, looked up and not stored, or choices that decide what is done.
  target_database_id: null,
  source_app_id: null,
  target_app_ids: null,
  deployment_id: null,
  is_restart: null,
  public_access: null,
  keys: null,
  // Lists whose items become rows of another table; their integers are bounded far below an
  // integer column's range by their own schemas (a percentage, a stage order).
  triggers: null,
  stage_order: null,
  // What a presigned URL signs: nothing is stored (the key's length is S3's bound, as for uploads).
  'POST /object-storage/{id}/presign method': null,
  'POST /object-storage/{id}/presign key': null,
  'POST /object-storage/{id}/presign expires_in': null,
  'POST /object-storage/{id}/presign content_type': null,
};

interface Column {
  table: string;
  column: string;
  type: string;
  length: number | null;
}

type Schema = Record<string, any>;

/** The longest string a schema admits: maxLength, an enum's longest value, a uuid, or a length-bounding pattern. */
function maxLengthOf(s: Schema): number {
  if (typeof s.maxLength === 'number') return s.maxLength;
  if (Array.isArray(s.enum)) return Math.max(...s.enum.map((v: unknown) => String(v).length));
  if (s.format === 'uuid') return 36;
  // `^.{1,39}$` and `^(?=.{1,39}$)...`: the pattern bounds the length.
  const m = typeof s.pattern === 'string' ? /^\^(?:\(\?=)?\.\{\d*,(\d+)\}\$/.exec(s.pattern) : null;
  return m ? Number(m[1]) : Infinity;
}

const upperOf = (s: Schema): number => s.maximum ?? (s.exclusiveMaximum !== undefined ? s.exclusiveMaximum - 1 : Infinity);
const lowerOf = (s: Schema): number => s.minimum ?? (s.exclusiveMinimum !== undefined ? s.exclusiveMinimum + 1 : -Infinity);

/** A field's upper bounds, as compared between create and update: each alternative's longest string or largest integer. */
const upperBounds = (variants: Schema[]) =>
  variants
    .map((v) => (v.type === 'string' ? `string <= ${maxLengthOf(v)}` : v.type === 'integer' || v.type === 'number' ? `${v.type} <= ${upperOf(v)}` : v.type))
    .sort()
    .join(', ');

/** A request body field: its operation, name and alternatives (without null). */
interface Field {
  op: string;
  path: string;
  method: string;
  name: string;
  variants: Schema[];
}

/** Every top-level field of every request body in the served document, and the operations without a table list. */
function bodyFields(doc: Schema): Field[] {
  const resolve = (x: Schema | undefined): Schema | undefined => (x?.$ref ? doc.components.schemas[x.$ref.split('/').pop()] : x);
  const variants = (x: Schema | undefined): Schema[] => {
    const r = resolve(x);
    if (!r) return [];
    if (r.anyOf || r.oneOf) return (r.anyOf ?? r.oneOf).flatMap(variants);
    return r.type === 'null' ? [] : [r];
  };
  const fields: Field[] = [];
  for (const [rawPath, item] of Object.entries<Schema>(doc.paths)) {
    const path = rawPath.replace(/^\/v3/, '');
    for (const method of ['post', 'put', 'patch', 'delete']) {
      const body = item[method]?.requestBody?.content?.['application/json']?.schema;
      if (!body) continue;
      const op = `${method.toUpperCase()} ${path}`;
      for (const obj of variants(body))
        for (const [name, schema] of Object.entries<Schema>(obj.properties ?? {})) fields.push({ op, path, method, name, variants: variants(schema) });
    }
  }
  return fields;
}

describe('request bodies are bounded by their columns [postgres]', { skip: await skipUnless('postgres') }, () => {
  const s = useServer({ db: 'postgres', rateLimits: GENEROUS, env: { SLIPWAY_SIM_PROGRESSION: '*=immediate' } });
  let fields: Field[];
  before(async () => {
    fields = bodyFields(expectStatus(await s.get('/v3/openapi.json'), 200));
  });

  it('every string and integer of every request body fits the column it is stored in', async () => {
    const rows = (
      await sql<Column>`select table_name as "table", column_name as "column", data_type as "type", character_maximum_length as "length"
        from information_schema.columns where table_schema = current_schema()`.execute(s.app.database.db)
    ).rows;
    const columns = new Map(rows.map((c) => [`${c.table}.${c.column}`, c]));
    const problems = new Set<string>();
    let checked = 0;
    for (const { op, path, name, variants } of fields) {
      const tables = TABLES[path];
      if (!tables) {
        problems.add(`${op}: name the tables its body is stored in (TABLES)`);
        continue;
      }
      const mapped = FIELDS[`${op} ${name}`] !== undefined ? FIELDS[`${op} ${name}`] : FIELDS[name];
      if (mapped === null) continue;
      const column = mapped !== undefined ? columns.get(mapped) : tables.map((t) => columns.get(`${t}.${name}`)).find(Boolean);
      if (!column) {
        problems.add(`${op} ${name}: no column ${mapped ?? `${name} in ${tables.join(', ') || '(no table)'}`}; map it in FIELDS`);
        continue;
      }
      const where = `${op} ${name} -> ${column.table}.${column.column} (${column.type}${column.length ? `(${column.length})` : ''})`;
      for (const v of variants) {
        checked++;
        if (v.type === 'string') {
          if (column.type === 'text') continue;
          if (column.type !== 'character varying') problems.add(`${where}: a string`);
          else if (maxLengthOf(v) > column.length!) problems.add(`${where}: maxLength ${maxLengthOf(v)}`);
        } else if (v.type === 'integer') {
          if (column.type === 'bigint' || column.type === 'double precision') continue;
          if (column.type !== 'integer') problems.add(`${where}: an integer`);
          else if (!(upperOf(v) <= INT4_MAX) || !(lowerOf(v) >= INT4_MIN)) problems.add(`${where}: integer range [${lowerOf(v)}, ${upperOf(v)}]`);
        } else if (v.type === 'number') {
          if (column.type !== 'double precision') problems.add(`${where}: a number`);
        } else if (v.type === 'boolean') {
          if (column.type !== 'integer') problems.add(`${where}: a boolean`);
        } else if (v.type === 'array' || v.type === 'object') {
          // Stored as JSON text.
          if (column.type !== 'text') problems.add(`${where}: JSON in a ${column.type} column`);
        } else problems.add(`${where}: a schema without a type`);
      }
    }
    assert.ok(checked > 200, `the walk found the fields (${checked})`);
    assert.deepEqual([...problems], []);
  });

  it('a field has the same upper bounds on create and on update', () => {
    const differ: string[] = [];
    for (const created of fields.filter((f) => f.method === 'post'))
      for (const updated of fields.filter(
        (f) =>
          (f.method === 'patch' || f.method === 'put') &&
          f.name === created.name &&
          /^\/\{[^/}]+\}$/.test(f.path.slice(created.path.length)) &&
          f.path.startsWith(created.path),
      ))
        if (upperBounds(created.variants) !== upperBounds(updated.variants))
          differ.push(`${created.name}: ${created.op} ${upperBounds(created.variants)}, ${updated.op} ${upperBounds(updated.variants)}`);
    assert.deepEqual(differ, []);
  });

  it('PATCH /static-sites/{id} with a node_version longer than its create allows is 400, and changes nothing', async () => {
    const site = expectStatus(
      await s.post('/static-sites', { display_name: 'node version', repo_url: 'https://github.com/acme/site', default_branch: 'main', node_version: '20' }),
      201,
    );
    expectError(
      await s.patch(`/static-sites/${site.id}`, { node_version: '1'.repeat(33), display_name: 'renamed' }),
      400,
      'The request does not match the schema',
    );
    expectError(await s.patch(`/static-sites/${site.id}`, { node_version: '1'.repeat(21) }), 400, 'The request does not match the schema');
    const after = expectStatus(await s.get(`/static-sites/${site.id}`), 200);
    assert.equal(after.node_version, '20');
    assert.equal(after.display_name, 'node version');
    assert.equal(expectStatus(await s.patch(`/static-sites/${site.id}`, { node_version: '1'.repeat(20) }), 200).node_version, '1'.repeat(20));
  });

  it('POST /applications/{id}/preview-apps with a pull request number beyond an integer column is 400, and creates nothing', async () => {
    const p = expectStatus(await s.post('/pipelines', { display_name: 'bounds pipeline', type: 'trunk' }), 201);
    const src = expectStatus(
      await s.post('/applications', {
        display_name: 'bounds source',
        cluster_id: DEFAULT_CLUSTER.id,
        source: 'publicGit',
        git_type: 'github',
        repo_url: 'https://github.com/acme/shop',
        default_branch: 'main',
      }),
      201,
    );
    const dev = p.stages.find((x: { display_name: string }) => x.display_name === 'Dev');
    expectStatus(await s.post(`/pipelines/${p.id}/stages/${dev.id}/apps`, { app_id: src.id }), 200);
    expectStatus(await s.post(`/pipelines/${p.id}/preview/enable`, { repo_url: 'https://github.com/acme/shop' }), 200);
    const apps = async () => expectStatus(await s.get('/applications?limit=100'), 200).total as number;
    const before = await apps();
    expectError(
      await s.post(`/applications/${src.id}/preview-apps`, { branch: 'big', pull_request_number: INT4_MAX + 1 }),
      400,
      'The request does not match the schema',
    );
    assert.equal(await apps(), before);
    const rows = await s.app.database.db.selectFrom('pipeline_apps').select('app_id').where('pipeline_id', '=', p.id).execute();
    assert.deepEqual(
      rows.map((r) => r.app_id),
      [src.id],
    );
    expectStatus(await s.post(`/applications/${src.id}/preview-apps`, { branch: 'largest', pull_request_number: INT4_MAX }), 201);
  });
});
