// An operation flagged `pure` (Operation.pure) promises a read that changes nothing: no statement
// that writes, no job, no event or signal. The promise lets the router run it while its request is
// still being counted, so a broken promise would be a silent bug. With SLIPWAY_CHECK_PURE=1 (the
// test runner sets it) the promise is checked: a pure handler runs in a scope where each of those
// throws ImpureError, which fails its request (500) and so the test that sent it. Off, nothing
// here runs: the database is not wrapped and the router calls handlers directly.
import { AsyncLocalStorage } from 'node:async_hooks';
import type { CompiledQuery, DatabaseConnection, Dialect, Driver, QueryResult } from 'kysely';

export const checkingPurity = process.env.SLIPWAY_CHECK_PURE === '1';

const scope = new AsyncLocalStorage<string>();

export class ImpureError extends Error {}

/** Runs a pure operation's handler in the checked scope. */
export function runPure<T>(operationId: string, fn: () => Promise<T>): Promise<T> {
  return scope.run(operationId, fn);
}

/** Throws when called from a pure operation's handler: `what` it did. */
export function assertNotPure(what: string): void {
  const op = scope.getStore();
  if (op !== undefined) throw new ImpureError(`operation ${op} is flagged pure but ${what}`);
}

/** A statement that changes the database (reads, locks and `SELECT … FOR UPDATE` do not). */
const WRITES = /\b(insert\s+into|update\s+["\w.]+\s+set|delete\s+from|create\s|drop\s|alter\s|truncate\s)/i;

/** The dialect with every statement checked (pass-through outside a pure handler). */
export function checkedDialect(d: Dialect): Dialect {
  return {
    createAdapter: () => d.createAdapter(),
    createIntrospector: (db) => d.createIntrospector(db),
    createQueryCompiler: () => d.createQueryCompiler(),
    createDriver: () => checkedDriver(d.createDriver()),
  };
}

/**
 * The driver with its connections checked. A Proxy, so that every method (savepoints, and what a
 * custom driver adds) passes through, each given back the driver's own connection.
 */
function checkedDriver(driver: Driver): Driver {
  const inner = new WeakMap<object, DatabaseConnection>();
  const unwrap = (a: unknown) => (a && typeof a === 'object' && inner.get(a)) || a;
  return new Proxy(driver, {
    get(target, prop, receiver) {
      const v = Reflect.get(target, prop, receiver) as unknown;
      if (typeof v !== 'function') return v;
      if (prop === 'acquireConnection')
        return async () => {
          const c = (await target.acquireConnection()) as DatabaseConnection;
          const checked = checkedConnection(c);
          inner.set(checked, c);
          return checked;
        };
      return (...args: unknown[]) => (v as (...a: unknown[]) => unknown).apply(target, args.map(unwrap));
    },
  });
}

function checkedConnection(c: DatabaseConnection): DatabaseConnection {
  const check = (q: CompiledQuery) => {
    if (WRITES.test(q.sql)) assertNotPure(`ran a statement that writes: ${q.sql.slice(0, 120)}`);
  };
  return {
    executeQuery<R>(q: CompiledQuery): Promise<QueryResult<R>> {
      check(q);
      return c.executeQuery(q);
    },
    streamQuery<R>(q: CompiledQuery, chunkSize?: number): AsyncIterableIterator<QueryResult<R>> {
      check(q);
      return c.streamQuery(q, chunkSize);
    },
  };
}
