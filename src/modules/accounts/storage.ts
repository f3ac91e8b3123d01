// Queries of the accounts area: companies, their users, the bootstrap marker (settings) and the
// full reset. The tables, their types and migrations are the foundation's (src/shared/db).
import type { Tx } from '../../shared/db/index.js';
import type { CompaniesTable, UsersTable } from '../../shared/db/schema.js';

export async function insertCompany(tx: Tx, row: CompaniesTable) {
  await tx.insertInto('companies').values(row).execute();
}

/** Every company, oldest first. */
export async function listAllCompanies(tx: Tx): Promise<CompaniesTable[]> {
  return tx.selectFrom('companies').selectAll().orderBy('created_at').execute();
}

export async function findCompanyRow(tx: Tx, id: string): Promise<CompaniesTable | undefined> {
  return tx.selectFrom('companies').selectAll().where('id', '=', id).executeTakeFirst();
}

export async function updateCompanyStatus(tx: Tx, id: string, status: CompaniesTable['status'], updatedAt: string) {
  await tx.updateTable('companies').set({ status, updated_at: updatedAt }).where('id', '=', id).execute();
}

export async function insertUser(tx: Tx, row: UsersTable) {
  await tx.insertInto('users').values(row).execute();
}

/** A company's users (their public columns), oldest first. */
export async function listCompanyUsers(tx: Tx, companyId: string) {
  return tx.selectFrom('users').select(['id', 'email', 'image', 'full_name']).where('company_id', '=', companyId).orderBy('created_at').orderBy('id').execute();
}

/** Records that the server was bootstrapped at `at`; returns false when it was already (the first writer wins). */
export async function claimBootstrap(tx: Tx, at: string): Promise<boolean> {
  const claimed = await tx
    .insertInto('settings')
    .values({ key: 'bootstrapped', value: at })
    .onConflict((oc) => oc.column('key').doNothing())
    .returning('key')
    .executeTakeFirst();
  return claimed !== undefined;
}

/** Deletes every row of the given tables, one table after the other in the given order. */
export async function deleteAllRows(tx: Tx, tables: readonly string[]) {
  for (const t of tables) await (tx as any).deleteFrom(t).execute();
}
