// `${key}` references between environment variables, resolved without touching storage.
//
// Grammar of a value (decided here; the contract only says "a value may reference another variable
// with the form ${key}"):
//   - `${NAME}` where NAME matches KEY_PATTERN is a reference; it is replaced by the resolved value
//     of NAME. Resolution is recursive: NAME's own references are resolved first.
//   - `$${` is the escape for a literal `${`: `$${NAME}` yields the text `${NAME}`, unresolved.
//     The escape is applied once, left to right; it is the only escape.
//   - Every other `$` is literal: a lone `$`, `$$` not followed by `{` (so `pa$$word` is unchanged),
//     `$NAME` without braces, `${` without a closing `}`, and `${...}` whose content is not a valid key
//     (e.g. `${1X}`, `${A-B}`, `${}`). Shell forms such as `${A:-default}` are therefore not expanded.
//   - Substituted text is not scanned again: a referenced value that resolved to `${X}` (escaped or
//     unresolved) stays `${X}` in the referencing variable.
// Failures never throw; they leave the reference text (`${NAME}`) in place and add a readable problem:
//   - unknown key:  `DATABASE_URL references unknown variable ${DB_HOST}`
//   - cycle:        `cycle: A -> B -> A` (once per strongly connected group; references between members
//                   of the group stay unresolved, references to variables outside it resolve normally)
//   - size:         a value that would grow past MAX_RESOLVED_LENGTH keeps the reference that would push
//                   it over (guards against exponential growth like A=${B}${B}, B=${C}${C}, ...).
// Values of `literal` keys (the injected system variables) are taken verbatim and never scanned, so a
// branch named `x-${SECRET}` cannot pull another variable's value into SVL_DEPLOYMENT_BRANCH.

/** Variable names: ASCII letters, digits and underscore, not starting with a digit (POSIX portable names). */
export const KEY_PATTERN = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** Longest resolved value: 128 KiB, Linux's limit for one environment string (MAX_ARG_STRLEN). */
export const MAX_RESOLVED_LENGTH = 128 * 1024;

export type Segment = { text: string } | { ref: string; raw: string };

/** Splits a value into literal text and `${NAME}` references, applying the `$${` escape. */
export function parseValue(value: string): Segment[] {
  const out: Segment[] = [];
  let text = '';
  let i = 0;
  while (i < value.length) {
    const d = value.indexOf('$', i);
    if (d < 0) {
      text += value.slice(i);
      break;
    }
    text += value.slice(i, d);
    if (value.startsWith('$${', d)) {
      text += '${';
      i = d + 3;
      continue;
    }
    if (value.startsWith('${', d)) {
      const end = value.indexOf('}', d + 2);
      const name = end < 0 ? '' : value.slice(d + 2, end);
      if (KEY_PATTERN.test(name)) {
        if (text) out.push({ text });
        text = '';
        out.push({ ref: name, raw: value.slice(d, end + 1) });
        i = end + 1;
        continue;
      }
    }
    text += '$';
    i = d + 1;
  }
  if (text) out.push({ text });
  return out;
}

export interface Resolution {
  vars: Record<string, string>;
  problems: string[];
}

/**
 * Resolves `${key}` references of `vars` against `vars` itself. Keys keep their input order. Never
 * throws and always terminates (work is linear in the size of the reference graph plus the output).
 */
export function resolveReferences(vars: Record<string, string>, literal: ReadonlySet<string> = new Set()): Resolution {
  const raw = new Map(Object.entries(vars));
  const keys = [...raw.keys()];
  const problems: string[] = [];
  const parsed = new Map<string, Segment[]>();
  const edges = new Map<string, string[]>();

  for (const k of keys) {
    const v = raw.get(k)!;
    const segs: Segment[] = literal.has(k) ? [{ text: v }] : parseValue(v);
    parsed.set(k, segs);
    const targets = new Set<string>();
    const unknown = new Set<string>();
    for (const s of segs) {
      if (!('ref' in s)) continue;
      if (raw.has(s.ref)) targets.add(s.ref);
      else if (!unknown.has(s.ref)) {
        unknown.add(s.ref);
        problems.push(`${k} references unknown variable \${${s.ref}}`);
      }
    }
    edges.set(k, [...targets]);
  }

  // Strongly connected components (Tarjan, iterative so long chains cannot overflow the stack).
  // Components come out in reverse topological order: everything a component references is
  // emitted before it, so one pass in emission order resolves each value from finished ones.
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const onStack = new Set<string>();
  const stack: string[] = [];
  const component = new Map<string, number>();
  const components: string[][] = [];
  let counter = 0;
  const visit = (k: string) => {
    index.set(k, counter);
    low.set(k, counter);
    counter++;
    stack.push(k);
    onStack.add(k);
  };
  for (const root of keys) {
    if (index.has(root)) continue;
    visit(root);
    const work: { k: string; next: number }[] = [{ k: root, next: 0 }];
    while (work.length) {
      const top = work[work.length - 1]!;
      const out = edges.get(top.k)!;
      if (top.next < out.length) {
        const w = out[top.next++]!;
        if (!index.has(w)) {
          visit(w);
          work.push({ k: w, next: 0 });
        } else if (onStack.has(w)) low.set(top.k, Math.min(low.get(top.k)!, index.get(w)!));
        continue;
      }
      work.pop();
      const parent = work[work.length - 1];
      if (parent) low.set(parent.k, Math.min(low.get(parent.k)!, low.get(top.k)!));
      if (low.get(top.k) === index.get(top.k)) {
        const members: string[] = [];
        let w: string;
        do {
          w = stack.pop()!;
          onStack.delete(w);
          component.set(w, components.length);
          members.push(w);
        } while (w !== top.k);
        components.push(members);
      }
    }
  }

  const order = new Map(keys.map((k, i) => [k, i]));
  for (const members of components) {
    const cyclic = members.length > 1 || edges.get(members[0]!)!.includes(members[0]!);
    if (cyclic) problems.push(`cycle: ${cyclePath(members, edges, component, order).join(' -> ')}`);
  }

  const resolved = new Map<string, string>();
  for (const members of components) {
    for (const k of members) {
      let value = '';
      let tooLong = false;
      for (const s of parsed.get(k)!) {
        if (!('ref' in s)) {
          value += s.text;
          continue;
        }
        const sub = raw.has(s.ref) && component.get(s.ref) !== component.get(k) ? resolved.get(s.ref)! : s.raw;
        if (value.length + sub.length > MAX_RESOLVED_LENGTH && sub !== s.raw) {
          if (!tooLong) problems.push(`${k} would be longer than ${MAX_RESOLVED_LENGTH} characters; \${${s.ref}} left unresolved`);
          tooLong = true;
          value += s.raw;
        } else value += sub;
      }
      resolved.set(k, value);
    }
  }
  return { vars: Object.fromEntries(keys.map((k) => [k, resolved.get(k)!])), problems };
}

/** A shortest cycle through the first (input order) member of a cyclic component, closed on itself. */
function cyclePath(members: string[], edges: Map<string, string[]>, component: Map<string, number>, order: Map<string, number>): string[] {
  const start = members.reduce((a, b) => (order.get(a)! <= order.get(b)! ? a : b));
  const c = component.get(start);
  const prev = new Map<string, string>();
  const queue = [start];
  for (let qi = 0; qi < queue.length; qi++) {
    const k = queue[qi]!;
    for (const w of edges.get(k)!) {
      if (component.get(w) !== c) continue;
      if (w === start) {
        const back: string[] = [];
        for (let p = k; p !== start; p = prev.get(p)!) back.push(p);
        return [start, ...back.reverse(), start];
      }
      if (!prev.has(w)) {
        prev.set(w, k);
        queue.push(w);
      }
    }
  }
  return [...members, members[0]!]; // unreachable for a real cycle; keeps the function total
}
