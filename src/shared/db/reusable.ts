// Statements of the hot paths built and compiled once per dialect, then run with new values. The
// query builder builds an operation tree and compiles it to SQL on every call, which costs more
// than a cheap statement itself (as on SQLite).
// A reusable statement's shape must not depend on its values: it is built with placeholders.
import type { Compilable, CompiledQuery, Insertable, RawBuilder } from 'kysely';
import type { Tx } from './index.js';
import type { DB } from './schema.js';
import { compiled, fixedShape } from './postgres-client.js';

/** A value to be filled in at run time, taken from what the call is given (the compiled statement's parameter list holds these). */
class Slot {
  constructor(readonly take: (given: never) => unknown) {}
}

interface Shape {
  compiled: CompiledQuery;
  /** Per parameter: a slot filled from the values, or a value that is part of the statement. */
  params: unknown[];
}

const slotsOf = new Proxy({}, { get: (_, name) => new Slot((values: Record<string | symbol, unknown>) => values[name]) });

/** The compiled statement with the values taken from `given` put in its slots. */
function fill<O>(shape: Shape, given: unknown): CompiledQuery<O> {
  const parameters = shape.params.map((p) => (p instanceof Slot ? p.take(given as never) : p));
  return { ...shape.compiled, parameters } as CompiledQuery<O>;
}

function shapeOf(compiled: CompiledQuery): Shape {
  return { compiled: fixedShape(compiled), params: [...compiled.parameters] };
}

/** One compiled form per dialect adapter (SQLite and PostgreSQL compile to different SQL). */
const adapterOf = (tx: Tx): object => tx.getExecutor().adapter;

/**
 * A statement built once by `build` with placeholders for `P`'s properties, and compiled once per
 * dialect; calling the result compiles nothing. Use a property only where a value goes
 * (`where('id', '=', p.id)`, `set({ name: p.name })`, an element of a list): never test it or
 * pass it as a list, since while `build` runs it is a placeholder, not the value. Lists in
 * `build` are part of the shape (a statement per length, if lengths vary).
 */
export function reusable<P extends object, O>(build: (db: Tx, p: P) => Compilable<O> | RawBuilder<O>): (tx: Tx, values: P) => CompiledQuery<O> {
  const shapes = new WeakMap<object, Shape>();
  return (tx, values) => {
    const adapter = adapterOf(tx);
    let shape = shapes.get(adapter);
    if (!shape) {
      const q = build(tx, slotsOf as P);
      shapes.set(adapter, (shape = shapeOf(compiled(tx, q))));
    }
    return fill<O>(shape, values);
  };
}

/** A key of `reusableBy`: the parts a statement's shape depends on (no spaces in them). */
type KeyParts = readonly (string | number)[];

/**
 * `reusable` for statements whose shape also depends on a few parts from small, fixed sets (a
 * table's name, its columns, a list's length, a variant): one shape per key and dialect. `build`
 * gets the key's parts to shape the statement with.
 */
export function reusableBy<K extends KeyParts, P extends object, O>(
  build: (db: Tx, key: K, p: P) => Compilable<O> | RawBuilder<O>,
): (tx: Tx, key: K, values: P) => CompiledQuery<O> {
  const byKey = new Map<string, (tx: Tx, values: P) => CompiledQuery<O>>();
  return (tx, key, values) => {
    const id = key.join(' ');
    let statement = byKey.get(id);
    if (!statement) byKey.set(id, (statement = reusable((db, p: P) => build(db, key, p))));
    return statement(tx, values);
  };
}

/** A list of `n` placeholders in a reusable statement's shape, filled from `listValues(items, prefix)`. */
export const listOf = (p: object, n: number, prefix: string): unknown[] => Array.from({ length: n }, (_, i) => (p as Record<string, unknown>)[`${prefix}${i}`]);

/** The values of a list for `listOf` (to spread into the values given). */
export const listValues = (items: readonly unknown[], prefix: string): Record<string, unknown> => Object.fromEntries(items.map((v, i) => [`${prefix}${i}`, v]));

const inserts = new WeakMap<object, Map<string, Shape>>();
const MAX_INSERT_SHAPES = 256;

/** What follows an insert's values (e.g. ON CONFLICT ... RETURNING), named for the cache. */
export interface InsertTail {
  name: string;
  finish(q: any): Compilable<unknown>;
}

/**
 * `insert into table (columns of the first row) values (...), ...` compiled once per table,
 * column list, row count and tail. Every row has the first row's columns, in the same order.
 */
export function insertRows<T extends keyof DB & string>(tx: Tx, table: T, rows: readonly Insertable<DB[T]>[], tail?: InsertTail): CompiledQuery {
  const columns = Object.keys(rows[0]!);
  const key = `${table}:${rows.length}:${columns.join(',')}:${tail?.name ?? ''}`;
  const adapter = adapterOf(tx);
  let byKey = inserts.get(adapter);
  if (!byKey) inserts.set(adapter, (byKey = new Map()));
  let shape = byKey.get(key);
  if (!shape) {
    // Row counts vary (log lines): beyond a bound, further shapes are compiled each time.
    if (byKey.size >= MAX_INSERT_SHAPES) byKey.delete(byKey.keys().next().value!);
    const slotted = rows.map((_, i) => Object.fromEntries(columns.map((c) => [c, new Slot((given: Record<string, unknown>[]) => given[i]![c])])));
    const q = (tx.insertInto(table) as any).values(slotted);
    byKey.set(key, (shape = shapeOf((tail ? tail.finish(q) : q).compile() as CompiledQuery)));
  }
  return fill(shape, rows);
}

/** The rows of a compiled statement's result. */
export async function all<O>(tx: Tx, q: CompiledQuery<O>): Promise<O[]> {
  return (await tx.executeQuery(q)).rows;
}

/** The first row of a compiled statement's result, or undefined. */
export async function first<O>(tx: Tx, q: CompiledQuery<O>): Promise<O | undefined> {
  return (await tx.executeQuery(q)).rows[0];
}
