// Request coalescing: one round trip per key at a time, shared by the callers that queued for it.

interface Waiter<I, O> {
  item: I;
  resolve: (o: O) => void;
  reject: (e: unknown) => void;
}

/**
 * Work per key that runs at most once at a time. A call for an idle key runs at once, alone. Calls
 * that arrive while their key's run is in flight wait for it to end and are then served together
 * by the next run, which starts after every one of them arrived: no call is answered by work that
 * began before it was made. `run` gets the batch's items in arrival order and returns one output
 * per item. With `gather`, a call for an idle key waits for the end of the event loop's turn
 * (setImmediate) so that the calls of the same turn run together: for work that completes within
 * one turn (SQLite is synchronous), where nothing would otherwise be in flight to wait for. The
 * keys gathered in one turn all start their runs in one synchronous stretch at its end.
 */
export class Coalescer<I, O> {
  private queues = new Map<string, Waiter<I, O>[]>();
  /** Gathering: the keys whose first calls came in this turn (their runs start at its end). */
  private turn: string[] | undefined;

  constructor(
    private run: (key: string, items: I[]) => Promise<O[]>,
    private gather = false,
  ) {}

  call(key: string, item: I): Promise<O> {
    return new Promise<O>((resolve, reject) => {
      const waiting = this.queues.get(key);
      if (waiting) return void waiting.push({ item, resolve, reject });
      if (!this.gather) {
        this.queues.set(key, []);
        return this.start(key, [{ item, resolve, reject }]);
      }
      this.queues.set(key, [{ item, resolve, reject }]);
      if (!this.turn) {
        this.turn = [];
        setImmediate(() => this.endTurn());
      }
      this.turn.push(key);
    });
  }

  /**
   * The end of a gathering turn: every key gathered in it starts its run, one after the other in
   * one synchronous stretch (so runs that share a statement across keys, see batchedPerKey, can).
   */
  private endTurn(): void {
    const keys = this.turn!;
    this.turn = undefined;
    for (const key of keys) {
      const batch = this.queues.get(key)!;
      this.queues.set(key, []);
      this.start(key, batch);
    }
  }

  private start(key: string, batch: Waiter<I, O>[]): void {
    let run: Promise<O[]>;
    try {
      run = this.run(
        key,
        batch.map((w) => w.item),
      );
    } catch (e) {
      run = Promise.reject(e);
    }
    // The key is free (or its next batch starts) as soon as its run has settled, before the
    // callers resume: a call a caller makes next is not held for a run that has ended.
    const settled = () => {
      const next = this.queues.get(key)!;
      if (next.length) {
        this.queues.set(key, []);
        this.start(key, next);
      } else this.queues.delete(key);
    };
    run.then(
      (outs) => {
        settled();
        batch.forEach((w, i) => w.resolve(outs[i]!));
      },
      (e) => {
        settled();
        batch.forEach((w) => w.reject(e));
      },
    );
  }
}

/**
 * Calls for the same key object made in one synchronous stretch (before the microtask queue runs
 * again) are served by one run of `run` with all their items, in call order: e.g. the writes that
 * several records make in one transaction at once (the key) become one statement.
 */
export function batchedPerKey<K extends object, I, O>(run: (key: K, items: I[]) => Promise<O[]>): (key: K, item: I) => Promise<O> {
  const open = new WeakMap<K, { items: I[]; outs: Promise<O[]> }>();
  return (key, item) => {
    let batch = open.get(key);
    if (!batch) {
      const items: I[] = [];
      const outs = Promise.resolve().then(() => {
        open.delete(key);
        return run(key, items);
      });
      open.set(key, (batch = { items, outs }));
    }
    const i = batch.items.push(item) - 1;
    return batch.outs.then((outs) => outs[i]!);
  };
}
