// Queries of the API keys area. The table, its type and migration are the foundation's
// (src/shared/db); a deleted key keeps its row (`deleted_at` set), and only live keys are found.
import type { Scope } from '../../shared/context.js';
import type { Tx } from '../../shared/db/index.js';
import type { ApiKeysTable } from '../../shared/db/schema.js';
import { paginate, type Page } from '../../shared/pagination.js';

export async function insertApiKey(tx: Tx, row: ApiKeysTable) {
  await tx.insertInto('api_keys').values(row).execute();
}

/** A company's key that is not deleted. */
export async function findLiveKey(tx: Tx, companyId: string, id: string): Promise<ApiKeysTable | undefined> {
  return tx.selectFrom('api_keys').selectAll().where('id', '=', id).where('company_id', '=', companyId).where('deleted_at', 'is', null).executeTakeFirst();
}

/** A page of a company's keys that are not deleted, limited to `scope` when given. */
export async function listLiveKeysPage(tx: Tx, companyId: string, scope: Scope, page: Page) {
  let q = tx.selectFrom('api_keys').selectAll().where('company_id', '=', companyId).where('deleted_at', 'is', null);
  if (scope) q = q.where('id', 'in', scope.size ? [...scope] : ['']);
  return paginate(q, page);
}

export async function updateKeyColumns(tx: Tx, id: string, set: Partial<ApiKeysTable>) {
  await tx.updateTable('api_keys').set(set).where('id', '=', id).execute();
}

/** Marks a key deleted at `at`: disabled, and its previous token no longer accepted. */
export async function markKeyDeleted(tx: Tx, id: string, at: string) {
  await tx.updateTable('api_keys').set({ deleted_at: at, is_enabled: 0, updated_at: at, old_token_hash: null }).where('id', '=', id).execute();
}
