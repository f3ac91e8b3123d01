// The PostgreSQL pool as the query builder sees it: every pooled connection is wrapped so that
// (1) queries with parameters run as named prepared statements, and (2) a transaction spends as
// few round trips as its statements allow: its BEGIN and the writes whose results nobody reads
// (`later`) travel with its next statement or its COMMIT, as one multi-statement simple query.
// On this kind of machine a round trip costs the server process 0.15 to 0.25 ms of CPU (socket
// writes and wake-ups, profiled), more than PostgreSQL spends planning a short statement.
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
  const c = 'sql' in q && 'parameters' in q ? q : 'isRawBuilder' in q ? q.compile(tx) : q.compile();
  if (inPostgresTransaction(tx)) {
    await tx.executeQuery(CompiledQuery.raw(LATER + c.sql, [...c.parameters]));
  } else await tx.executeQuery(c);
}

type Result = PG.QueryResult;
const none = (command?: string): Result => ({ command: command as string, rowCount: null, rows: [], oid: 0, fields: [] });
const last = (r: Result | Result[]): Result => (Array.isArray(r) ? r[r.length - 1]! : r);

/**
 * The statement with its parameters written in as literals, for a simple query; undefined when a
 * value has no plain text form (a buffer, a date, an array or object: those keep the driver's own
 * encoding). A literal is untyped text, as the driver sends parameters, so PostgreSQL infers
 * its type from the context the same way.
 */
export function inlined(text: string, values: readonly unknown[] | undefined, escape: (s: string) => string): string | undefined {
  if (!values?.length) return text;
  const lits: string[] = [];
  for (const v of values) {
    if (v === null || v === undefined) lits.push('NULL');
    // Most values hold neither a quote nor a backslash: quoted as they are (what `escape` gives them).
    else if (typeof v === 'string') lits.push(v.includes("'") || v.includes('\\') ? escape(v) : `'${v}'`);
    else if (typeof v === 'number' || typeof v === 'bigint' || typeof v === 'boolean') lits.push(`'${String(v)}'`);
    else return undefined;
  }
  // $n outside quoted strings, identifiers and comments; the text between them is copied in slices.
  let out = '';
  let copied = 0;
  let i = 0;
  while (i < text.length) {
    const ch = text.charCodeAt(i);
    if (ch === 39 || ch === 34) {
      // A quoted string or identifier: to its closing quote (a doubled quote is two of them).
      const end = text.indexOf(ch === 39 ? "'" : '"', i + 1);
      if (end < 0) return undefined;
      i = end + 1;
    } else if (ch === 45 && text.charCodeAt(i + 1) === 45) {
      const end = text.indexOf('\n', i);
      i = end < 0 ? text.length : end;
    } else if (ch === 36 && isDigit(text.charCodeAt(i + 1))) {
      let j = i + 1;
      while (isDigit(text.charCodeAt(j))) j++;
      const lit = lits[Number(text.slice(i + 1, j)) - 1];
      if (lit === undefined) return undefined;
      out += text.slice(copied, i) + lit;
      copied = i = j;
    } else i++;
  }
  return copied ? out + text.slice(copied) : text;
}

const isDigit = (c: number) => c >= 48 && c <= 57;

/**
 * The pool with each connection wrapped (see the top of this file). Prepared statements: one name
 * per SQL text, so each connection parses and plans a text once (planning was most of a simple
 * query's cost, profiled); texts with an IN list of several values (their number grows with the
 * lists' lengths) and texts beyond the first `maxNamed` run unnamed. A statement whose result
 * columns a migration changed meanwhile is run again unnamed.
 */
export function wrappedPool(pool: PG.Pool, escape: (s: string) => string, maxNamed = 500): PG.Pool {
  const names = new Map<string, string>();
  const nameOf = (text: string): string | undefined => {
    let name = names.get(text);
    if (name === undefined && names.size < maxNamed && !/\bin \(\$\d+, /i.test(text)) names.set(text, (name = `slipway_${names.size + 1}`));
    return name;
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
    const prepared = (text: string, values?: unknown[]): Promise<Result> => {
      const name = values?.length ? nameOf(text) : undefined;
      if (!name) return client.query(text, values);
      return client.query({ text, values, name }).catch((e: { code?: string }) => {
        if (e.code !== '0A000') throw e;
        return client.query(text, values);
      });
    };
    // Statements of the open transaction not sent yet: its BEGIN, then `later` writes.
    let pending: string[] = [];
    let open = false;
    const send = (texts: string[]): Promise<Result> => client.query(texts.join(';\n')).then(last);
    const query = (text: string, values?: unknown[]): Promise<Result> => {
      if (typeof text !== 'string') return client.query(text, values);
      // Outside a transaction (every read of a request) a statement goes straight out.
      return open || text === 'begin' ? inTransaction(text, values) : prepared(text, values);
    };
    const inTransaction = async (text: string, values?: unknown[]): Promise<Result> => {
      if (text === 'begin') {
        pending = ['begin'];
        open = true;
        return none('BEGIN');
      }
      if (text === 'commit' || text === 'rollback') {
        const p = pending;
        pending = [];
        open = false;
        // Nothing was sent: there is nothing to end.
        if (p[0] === 'begin') return text === 'commit' && p.length > 1 ? send([...p, 'commit']) : none(text.toUpperCase());
        if (text === 'rollback' || !p.length) return client.query(text);
        return send([...p, 'commit']);
      }
      if (open && text.startsWith(LATER)) {
        const t = inlined(text.slice(LATER.length), values, escape);
        if (t !== undefined) {
          pending.push(t);
          return none();
        }
        text = text.slice(LATER.length);
      }
      if (pending.length) {
        const p = pending;
        pending = [];
        const t = inlined(text, values, escape);
        if (t !== undefined) return send([...p, t]);
        await send(p);
      }
      return prepared(text, values);
    };
    return new Proxy(client, { get: (c, p, r) => (p === 'query' ? query : (Reflect.get(c, p, r) as unknown)) });
  }
}
