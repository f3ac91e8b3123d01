// The PostgreSQL pool as the query builder sees it: every pooled connection is wrapped so that
// (1) queries with parameters run as named prepared statements, and (2) a transaction spends as
// few round trips as its statements allow: its BEGIN and the writes whose results nobody reads
// (`later`) travel with its next statement or its COMMIT, in one write to the socket, each as its
// prepared statement (extended protocol: parsed and planned once per connection), with one Sync
// at the end, so PostgreSQL answers them all in one go: every round trip costs the server process
// CPU (socket writes and wake-ups), and statements sent as query text with the values written in
// would be parsed, analysed and planned anew each time. Every statement with parameters goes out
// as such a batch (of one, outside a transaction), whose rows are read with column parsers kept
// per prepared statement; a prepared statement is described (its result columns asked for) at its
// first run on a connection only. Reads that do not depend on each other can go out in one batch
// too (`together`), each with its own rows.
import { CompiledQuery, type Compilable, type RawBuilder } from 'kysely';
import type PG from 'pg';
import type { Tx } from './index.js';
import { inPostgresTransaction } from './dialect.js';

/** Marks a statement that may wait for the transaction's next one (see `later`). */
const LATER = '/* later */ ';

/**
 * Runs a statement whose result the caller does not read. On PostgreSQL inside a transaction it
 * is sent with the transaction's next statement (or its COMMIT) in the same round trip, in order,
 * so every later statement of the transaction sees its effect; an error it raises surfaces there
 * and rolls the transaction back. Only for statements that are not expected to fail and whose
 * row count does not matter. Elsewhere (SQLite, outside a transaction) it runs at once.
 */
export async function later(tx: Tx, q: Compilable | RawBuilder<unknown> | CompiledQuery): Promise<void> {
  const c = compiled(tx, q);
  if (inPostgresTransaction(tx)) {
    await tx.executeQuery(CompiledQuery.raw(LATER + c.sql, [...c.parameters]));
  } else await tx.executeQuery(c);
}

/** A query builder's statement, a raw one or a compiled one, compiled for `tx`. */
export function compiled<O>(tx: Tx, q: Compilable<O> | RawBuilder<O> | CompiledQuery<O>): CompiledQuery<O> {
  return 'sql' in q && 'parameters' in q ? q : 'isRawBuilder' in q ? q.compile(tx) : q.compile();
}

/** Texts of a fixed shape (see `fixedShape`). */
const fixedTexts = new Set<string>();

/**
 * Marks a compiled statement's text as one of a fixed shape, built once by code (the reusable
 * statements, the job claims): named as a prepared statement even when it holds an IN list,
 * since its list's length does not vary (see wrappedPool). Returns the statement.
 */
export function fixedShape<C extends { sql: string }>(compiled: C): C {
  fixedTexts.add(compiled.sql);
  return compiled;
}

type Result = PG.QueryResult;
const none = (command?: string): Result => ({ command: command as string, rowCount: null, rows: [], oid: 0, fields: [] });

/**
 * A read of `together` that goes out with the transaction's next statement: it is given the
 * read's result when that batch is answered, or the batch's error. It travels to the connection
 * as the statement's last parameter value (the query builder passes the values on as they are).
 */
class Held {
  constructor(
    readonly deliver: (r: Result) => void,
    readonly fail: (e: Error) => void,
  ) {}
}

/** A statement of the open transaction not sent yet. */
interface Pending {
  text: string;
  values?: unknown[];
  held?: Held;
}

/**
 * Reads that do not depend on each other, in one round trip where it saves one (PostgreSQL, in a
 * transaction: all but the last go out with the last, in one batch); elsewhere one after the
 * other. The rows of each, in order.
 */
export async function together(tx: Tx, queries: readonly CompiledQuery<unknown>[]): Promise<unknown[][]> {
  const out: unknown[][] = [];
  if (!inPostgresTransaction(tx)) {
    for (const q of queries) out.push((await tx.executeQuery(q)).rows);
  } else {
    const held = queries.slice(0, -1).map(
      (q) =>
        new Promise<unknown[]>((resolve, reject) => {
          tx.executeQuery(CompiledQuery.raw(q.sql, [...q.parameters, new Held((r) => resolve(r.rows), reject)])).catch(reject);
        }),
    );
    const last = tx.executeQuery(queries[queries.length - 1]!).then((r) => r.rows);
    out.push(...(await Promise.all([...held, last])));
  }
  return out;
}

/** What a batch writes to: the driver's connection (pg's Connection, its extended-protocol messages). */
interface Wire {
  parse(m: { text: string; name: string }): void;
  bind(m: { statement: string; values: unknown[] }): void;
  describe(m: { type: 'P'; name: string }): void;
  execute(m: { portal: string }): void;
  sync(): void;
  sendCopyFail(message: string): void;
  stream: { cork?(): void; uncork?(): void };
  /** Names parsed on this connection, and those whose Parse is on its way (the driver's own bookkeeping). */
  parsedStatements: Record<string, string>;
  submittedNamedStatements: Record<string, string>;
}

/** A RowDescription's field as the driver's protocol parser gives it. */
interface Field {
  name: string;
  dataTypeID: number;
}

/** How the rows of one row description are read: each column's name and its text parser. */
interface RowShape {
  fields: Field[];
  names: string[];
  parsers: ((text: string) => unknown)[];
}

/** The shape of a statement that returns no rows (a described statement the server answered with NoData). */
const NO_ROWS: RowShape = { fields: [], names: [], parsers: [] };

/** The driver (the pg module; passed in, as it is loaded lazily): its type parsers, and `utils.prepareValue` (untyped). */
type Driver = typeof PG;

/** `COMMAND [OID] ROWS`, as PostgreSQL's CommandComplete says it. */
const COMMAND = /^([A-Za-z]+)(?: (\d+))?(?: (\d+))?/;

/**
 * The class of batches for this driver: a query object the driver queues like any other (its
 * documented custom-query interface: `submit` and the `handle...` callbacks), made of one or
 * several statements written out at once, each as Parse (a named statement's first use on the
 * connection; an unnamed one every time), Bind and Execute (the last one also Describe: its rows
 * are the batch's result), then a single Sync. It ends with the last statement's result, or with
 * the first error (PostgreSQL skips the statements after a failing one until the Sync). The
 * driver records a named statement as parsed when its ParseComplete arrives, under the query's
 * `name` and `text`: those of the statement being answered. The rows are read with the column
 * parsers of the statement's row description, kept per connection and statement name (see
 * `described`): the driver's own query object builds them anew for every result, with copies of
 * its settings.
 */
function batchClass(driver: Driver) {
  const { utils, types } = driver as unknown as { utils?: { prepareValue?(v: unknown): unknown }; types: Driver['types'] };
  const prepareValue = utils?.prepareValue;
  if (!prepareValue) throw new Error('the PostgreSQL driver has no utils.prepareValue (pg 8 has)');
  const shapeOf = (fields: Field[]): RowShape => ({
    fields,
    names: fields.map((f) => f.name),
    parsers: fields.map((f) => types.getTypeParser(f.dataTypeID, 'text') as (text: string) => unknown),
  });
  /**
   * Per connection, the row shapes of the named statements it has described (a RowDescription
   * answered): a statement prepared on that connection answers with the same columns every time
   * (when its tables' columns change, PostgreSQL refuses to run it: SQLSTATE 0A000, see
   * wrappedPool), so it is not described again there.
   */
  const described = new WeakMap<Wire, Map<string, RowShape>>();
  return class Batch {
    /** Statements answered so far (CommandComplete received). */
    private answered = 0;
    private parsed: boolean[] = [];
    /** Per statement whose rows are read (the last one, and the held reads): its row shape, and its result. */
    private shapes: (RowShape | undefined)[] = [];
    private results: (Result | undefined)[];
    private wire: Wire | undefined;
    private failed = false;
    private readonly result = none();

    constructor(
      readonly statements: { text: string; values: unknown[]; name?: string; held?: Held }[],
      readonly callback: (err: Error | null, r?: Result) => void,
    ) {
      this.results = statements.map((st, i) => (i === statements.length - 1 ? this.result : st.held ? none() : undefined));
    }

    get name(): string | undefined {
      return this.parsed[this.answered] ? this.statements[this.answered]!.name : undefined;
    }
    get text(): string | undefined {
      return this.statements[this.answered]?.text;
    }

    submit(wire: Wire): Error | null {
      let values: unknown[][];
      try {
        // Values the driver cannot send fail the batch before anything is written.
        values = this.statements.map((s) => s.values.map((v) => prepareValue(v)));
      } catch (e) {
        return e as Error;
      }
      this.wire = wire;
      const known = described.get(wire);
      wire.stream.cork?.();
      try {
        for (const [i, s] of this.statements.entries()) {
          const name = s.name ?? '';
          if (!name || !(wire.parsedStatements[name] ?? wire.submittedNamedStatements[name])) {
            wire.parse({ text: s.text, name });
            if (name) {
              wire.submittedNamedStatements[name] = s.text;
              this.parsed[i] = true;
            }
          }
          wire.bind({ statement: name, values: values[i]! });
          // Only the rows of the last statement and of held reads are read: the others are not
          // described (no RowDescription or NoData to answer and parse), and rows they return
          // are dropped. Nor is one described when this connection described its prepared
          // statement before.
          if (this.results[i]) {
            const shape = name && !this.parsed[i] ? known?.get(name) : undefined;
            if (shape) this.shapeIs(i, shape);
            else wire.describe({ type: 'P', name: '' });
          }
          wire.execute({ portal: '' });
        }
        wire.sync();
      } finally {
        wire.stream.uncork?.();
      }
      return null;
    }

    private shapeIs(i: number, shape: RowShape): void {
      this.shapes[i] = shape;
      this.results[i]!.fields = shape.fields as unknown as Result['fields'];
    }

    handleRowDescription(msg: { fields: Field[] }): void {
      const i = this.answered;
      this.shapeIs(i, shapeOf(msg.fields));
      this.remember(this.statements[i]!.name, this.shapes[i]!);
    }

    /** A statement's shape as described, for this connection's next runs of it. */
    private remember(name: string | undefined, shape: RowShape): void {
      if (!name || !this.wire) return;
      let known = described.get(this.wire);
      if (!known) described.set(this.wire, (known = new Map()));
      known.set(name, shape);
    }

    handleDataRow(msg: { fields: (string | null)[] }): void {
      const shape = this.shapes[this.answered];
      const result = this.results[this.answered];
      if (!result || !shape) return;
      const row: Record<string, unknown> = {};
      for (let i = 0; i < msg.fields.length; i++) {
        const raw = msg.fields[i]!;
        row[shape.names[i]!] = raw === null ? null : shape.parsers[i]!(raw);
      }
      result.rows.push(row);
    }

    handleCommandComplete(msg: { text: string }): void {
      const i = this.answered;
      const result = this.results[i];
      if (result) {
        // No shape known at submit (so it was described) and no RowDescription came: it returns
        // no rows (the server said NoData).
        if (!this.shapes[i]) this.remember(this.statements[i]!.name, NO_ROWS);
        const m = COMMAND.exec(msg.text);
        if (m) {
          result.command = m[1]!;
          if (m[3]) result.rowCount = Number(m[3]);
          else if (m[2]) result.rowCount = Number(m[2]);
        }
      }
      this.answered++;
    }

    handleError(err: Error, wire: Wire): void {
      // The statements from the failing one on were skipped: their Parse never took effect.
      for (let i = this.answered; i < this.statements.length; i++) if (this.parsed[i]) delete wire.submittedNamedStatements[this.statements[i]!.name!];
      if (this.failed) return;
      this.failed = true;
      for (const st of this.statements) st.held?.fail(err);
      this.callback(err);
    }

    handleReadyForQuery(): void {
      if (this.failed) return;
      for (const [i, st] of this.statements.entries()) st.held?.deliver(this.results[i]!);
      this.callback(null, this.result);
    }

    handleEmptyQuery(): void {}
    handlePortalSuspended(): void {}
    handleCopyInResponse(wire: Wire): void {
      wire.sendCopyFail('no COPY data is sent through this connection');
    }
    handleCopyData(): void {}
  };
}

/**
 * The pool with each connection wrapped (see the top of this file). Prepared statements: one name
 * per SQL text, so each connection parses and plans a text once (planning is most of a simple
 * query's cost); texts with an IN list of several values (their number grows with the
 * lists' lengths) run unnamed unless their shape is fixed (`fixedShape`), and so do texts beyond
 * the first `maxNamed`. When the result columns of a prepared text changed (a migration altered
 * its table meanwhile: SQLSTATE 0A000), the text is given a new name, so every connection parses
 * it again; a statement sent on its own is then run again, one in a batch fails its transaction
 * (as any failing statement does) once.
 */
export function wrappedPool(pool: PG.Pool, driver: Driver, maxNamed = 500): PG.Pool {
  const Batch = batchClass(driver);
  const names = new Map<string, string>();
  let issued = 0;
  const nameOf = (text: string): string | undefined => {
    let name = names.get(text);
    if (name === undefined && names.size < maxNamed && (fixedTexts.has(text) || !/\bin \(\$\d+, /i.test(text))) names.set(text, (name = `slipway_${++issued}`));
    return name;
  };
  /** Whether an error says a prepared statement's result columns changed (SQLSTATE 0A000). */
  const stale = (e: unknown) => (e as { code?: unknown } | null)?.code === '0A000';
  /** After such an error: the texts that may have caused it (those with a name) are named anew. */
  const renamed = (e: unknown, texts: string[]): void => {
    if (stale(e)) for (const t of texts) if (names.has(t)) names.set(t, `slipway_${++issued}`);
  };
  const connect = pool.connect.bind(pool) as () => Promise<PG.PoolClient>;
  // One wrapper per pooled connection (the query builder keeps its state per connection object).
  const wrapped = new WeakMap<PG.PoolClient, PG.PoolClient>();
  return new Proxy(pool, {
    get(target, prop, receiver) {
      if (prop !== 'connect') return Reflect.get(target, prop, receiver) as unknown;
      return async () => {
        const client = await connect();
        let w = wrapped.get(client);
        if (!w) wrapped.set(client, (w = wrap(client)));
        return w;
      };
    },
  });

  function wrap(client: PG.PoolClient): PG.PoolClient {
    /**
     * A statement on its own: with parameters as a batch of one (its prepared statement, or
     * unnamed: see nameOf), run once more when its text was named anew (see renamed); without, as
     * a simple query.
     */
    const prepared = (text: string, values?: unknown[]): Promise<Result> => {
      if (!values?.length) return client.query(text, values);
      return send([{ text, values }]).catch((e: unknown) => {
        if (!stale(e)) throw e;
        return send([{ text, values }]);
      });
    };
    // Statements of the open transaction not sent yet: its BEGIN, then `later` writes.
    let pending: Pending[] = [];
    let open = false;
    /** The statements as one batch (see batchClass); the last one's result. */
    const send = (stmts: Pending[]): Promise<Result> =>
      new Promise((resolve, reject) => {
        const batch = new Batch(
          stmts.map((p) => ({ text: p.text, values: p.values ?? [], name: nameOf(p.text), held: p.held })),
          (err, r) => {
            if (!err) return resolve(r!);
            renamed(
              err,
              stmts.map((p) => p.text),
            );
            reject(err);
          },
        );
        void client.query(batch as unknown as PG.QueryConfig);
      });
    const query = (text: string, values?: unknown[]): Promise<Result> => {
      if (typeof text !== 'string') return client.query(text, values);
      // Outside a transaction (every read of a request) a statement goes straight out.
      return open || text === 'begin' ? inTransaction(text, values) : prepared(text, values);
    };
    const inTransaction = (text: string, values?: unknown[]): Promise<Result> => {
      if (text === 'begin') {
        pending = [{ text: 'begin' }];
        open = true;
        return Promise.resolve(none('BEGIN'));
      }
      if (text === 'commit' || text === 'rollback') {
        const p = pending;
        pending = [];
        open = false;
        // Nothing was sent yet (its BEGIN is still pending): nothing to roll back, and a commit
        // with nothing to write ends nothing.
        const unsent = p[0]?.text === 'begin';
        if (text === 'rollback') {
          for (const st of p) st.held?.fail(new Error('the transaction was rolled back before this read was sent'));
          return unsent ? Promise.resolve(none('ROLLBACK')) : client.query(text);
        }
        if (unsent && p.length === 1) return Promise.resolve(none('COMMIT'));
        return send([...p, { text: 'commit' }]);
      }
      if (open && text.startsWith(LATER)) {
        pending.push({ text: text.slice(LATER.length), values });
        return Promise.resolve(none());
      }
      const held = values?.[values.length - 1];
      if (open && held instanceof Held) {
        pending.push({ text, values: values!.slice(0, -1), held });
        return Promise.resolve(none());
      }
      if (pending.length) {
        const p = pending;
        pending = [];
        return send([...p, { text, values }]);
      }
      return prepared(text, values);
    };
    return new Proxy(client, { get: (c, p, r) => (p === 'query' ? query : (Reflect.get(c, p, r) as unknown)) });
  }
}
