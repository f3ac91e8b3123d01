// SQLite group commit: transactions that end in the same turn of the event loop are committed
// together, with one COMMIT, instead of one COMMIT each.
//
// SQLite runs one write transaction at a time, and a commit writes every page the transaction
// changed to the WAL, on the server's thread. Requests that arrive together touch mostly
// the same pages (the same tables' last leaf and index pages), so a group writes each page once.
//
// How: the first transaction opens the group (BEGIN). When it ends it is not committed yet: its
// caller waits, and the transactions after it run inside the same SQLite transaction, each as a
// savepoint (one that fails is rolled back alone). The group is committed at the end of the
// current turn of the event loop (setImmediate: after the socket reads Node had ready, whose
// requests have run as far as they could), or as soon as a transaction ends once 64 are in it or
// it is 20 ms old; a transaction still running then (it awaited more than the database) commits
// it when it ends. Only then is every caller in it answered, so nothing is reported done before
// its COMMIT; a COMMIT that fails fails them all, and none of their changes stays. A query outside
// a transaction commits the open group first, so it never reads what is not committed.
// Constraints must not be deferred on SQLite (none are): one transaction's violation, found at
// COMMIT, would fail its whole group.
import { SelectQueryNode, SqliteDialect, type CompiledQuery, type DatabaseConnection, type Driver, type QueryResult, type SqliteDatabase } from 'kysely';

/** The most transactions committed by one COMMIT. */
const MAX_GROUP = 64;
/** A group older than this is committed when its current transaction ends (the default of `maxAgeMs`). */
const MAX_GROUP_MS = 20;
const SAVEPOINT = 'slipway_group';

interface Waiting {
  resolve(): void;
  reject(error: unknown): void;
}

interface Group {
  /** Transactions ended inside the group, waiting for its COMMIT. */
  ended: Waiting[];
  openedAt: number;
  /** Commit when the transaction running now ends. */
  due: boolean;
}

class GroupConnection implements DatabaseConnection {
  inTransaction = false;
  /** Runs as a savepoint inside an open group (not the transaction that opened it). */
  joined = false;
  /** Its transaction ended inside the group: the connection has already passed to the next caller. */
  passedOn = false;
  constructor(private driver: GroupCommitDriver) {}
  executeQuery<R>(query: CompiledQuery): Promise<QueryResult<R>> {
    return Promise.resolve(this.driver.execute(this, query) as QueryResult<R>);
  }
  async *streamQuery<R>(query: CompiledQuery): AsyncIterableIterator<QueryResult<R>> {
    if (!SelectQueryNode.is(query.query)) throw new Error('SQLite only streams SELECT queries');
    this.driver.beforeQuery(this);
    for (const row of this.driver.db.prepare(query.sql).iterate(query.parameters)) yield { rows: [row as R] };
  }
}

class GroupCommitDriver implements Driver {
  private holder: GroupConnection | undefined;
  private queue: ((c: GroupConnection) => void)[] = [];
  private group: Group | undefined;
  /** The open group's commit is scheduled (end of this turn of the event loop). */
  private scheduled = false;

  constructor(
    readonly db: SqliteDatabase,
    /** Whether SQLite has a transaction open (better-sqlite3's `inTransaction`). */
    private inTransaction: () => boolean,
    private maxAgeMs: number,
  ) {}

  async init(): Promise<void> {}

  acquireConnection(): Promise<GroupConnection> {
    if (!this.holder) return Promise.resolve((this.holder = new GroupConnection(this)));
    return new Promise((resolve) => this.queue.push(resolve));
  }

  async releaseConnection(connection: DatabaseConnection): Promise<void> {
    const c = connection as GroupConnection;
    if (c.passedOn) return;
    // A transaction rolled back to its savepoint leaves the group open.
    if (this.group && this.due(this.group)) this.commitGroup();
    this.passOn();
  }

  async beginTransaction(connection: DatabaseConnection): Promise<void> {
    const c = connection as GroupConnection;
    if (this.group) {
      this.run(`SAVEPOINT ${SAVEPOINT}`);
      c.joined = true;
    } else {
      this.run('BEGIN');
      this.group = { ended: [], openedAt: performance.now(), due: false };
    }
    c.inTransaction = true;
  }

  async commitTransaction(connection: DatabaseConnection): Promise<void> {
    const c = connection as GroupConnection;
    if (c.joined) this.run(`RELEASE ${SAVEPOINT}`);
    c.inTransaction = false;
    const group = this.group!;
    if (this.due(group)) {
      const error = this.commitGroup();
      if (error) throw error;
      return;
    }
    const committed = new Promise<void>((resolve, reject) => group.ended.push({ resolve, reject }));
    c.passedOn = true;
    this.passOn();
    if (!this.scheduled) {
      this.scheduled = true;
      setImmediate(() => {
        this.scheduled = false;
        // The group open now (the one scheduled for may have been committed full, and another opened).
        const open = this.group;
        if (!open) return;
        // A transaction still running (it awaited more than the database) commits the group when it ends.
        if (this.holder) open.due = true;
        else this.commitGroup();
      });
    }
    return committed;
  }

  async rollbackTransaction(connection: DatabaseConnection): Promise<void> {
    const c = connection as GroupConnection;
    c.inTransaction = false;
    // Its COMMIT failed: the group is already over.
    if (!this.group) return;
    if (c.joined) {
      // (SQLite may have rolled the whole transaction back itself: the group's COMMIT then fails.)
      if (!this.inTransaction()) return;
      this.run(`ROLLBACK TO ${SAVEPOINT}`);
      this.run(`RELEASE ${SAVEPOINT}`);
    } else {
      // The transaction that opened the group: nothing else is in it yet.
      this.group = undefined;
      if (this.inTransaction()) this.run('ROLLBACK');
    }
  }

  async destroy(): Promise<void> {
    if (this.group && !this.holder) this.commitGroup();
    this.db.close();
  }

  /** Before a statement: one outside a transaction commits the open group first. */
  beforeQuery(c: GroupConnection): void {
    if (this.group && !c.inTransaction) this.commitGroup();
  }

  execute(c: GroupConnection, query: CompiledQuery): QueryResult<unknown> {
    this.beforeQuery(c);
    const stmt = this.db.prepare(query.sql);
    if (stmt.reader) return { rows: stmt.all(query.parameters) };
    const { changes, lastInsertRowid } = stmt.run(query.parameters);
    return { numAffectedRows: BigInt(changes), insertId: BigInt(lastInsertRowid), rows: [] };
  }

  /** The group is to be committed when its current transaction ends: full, old, or its turn of the event loop over. */
  private due(group: Group): boolean {
    return group.due || group.ended.length + 1 >= MAX_GROUP || performance.now() - group.openedAt >= this.maxAgeMs;
  }

  private passOn() {
    const next = this.queue.shift();
    this.holder = next && new GroupConnection(this);
    if (next) next(this.holder!);
  }

  /** Commits the open group and answers its transactions; the error when the commit failed. */
  private commitGroup(): unknown {
    const group = this.group!;
    this.group = undefined;
    let error: unknown;
    try {
      // A statement error that made SQLite roll back the whole transaction leaves nothing to commit.
      if (!this.inTransaction()) throw new Error('the transaction was rolled back before its commit');
      this.run('COMMIT');
    } catch (e) {
      error = e;
      try {
        if (this.inTransaction()) this.run('ROLLBACK');
      } catch {
        // Already rolled back.
      }
    }
    for (const w of group.ended) {
      if (error === undefined) w.resolve();
      else w.reject(error);
    }
    return error;
  }

  private run(sql: string) {
    this.db.prepare(sql).run([]);
  }
}

/** Options of group commit: `maxAgeMs`, how old a group may grow before the transaction that ends in it commits it (default 20 ms). */
export interface GroupCommitOptions {
  maxAgeMs?: number;
}

/** Kysely's SQLite dialect with group commit (see above). */
export class GroupCommitSqliteDialect extends SqliteDialect {
  constructor(
    private database: SqliteDatabase,
    private inTransaction: () => boolean,
    private options: GroupCommitOptions,
  ) {
    super({ database });
  }
  override createDriver(): Driver {
    return new GroupCommitDriver(this.database, this.inTransaction, this.options.maxAgeMs ?? MAX_GROUP_MS);
  }
}
