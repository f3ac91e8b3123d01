// Which SQL dialect a query builder speaks: the few statements that differ between SQLite and
// PostgreSQL (and the PostgreSQL-only round-trip savings) branch on it, here and nowhere else.
import { PostgresAdapter, type Kysely } from 'kysely';

/** Whether `db` (a database, or a transaction on one) is PostgreSQL. */
export const isPostgres = (db: Kysely<any>): boolean => db.getExecutor().adapter instanceof PostgresAdapter;

/** Whether `tx` is a transaction on PostgreSQL: where `later` holds statements back for the next round trip. */
export const inPostgresTransaction = (tx: Kysely<any>): boolean => tx.isTransaction && isPostgres(tx);
