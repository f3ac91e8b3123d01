// `${key}` resolution (src/modules/env-vars/references.ts), without a server: examples of the
// grammar and its failure modes, and properties over arbitrary reference graphs (fast-check).
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { KEY_PATTERN, MAX_RESOLVED_LENGTH, parseValue, resolveReferences } from '../../src/modules/env-vars/references.js';

const resolve = (vars: Record<string, string>, literal?: string[]) => resolveReferences(vars, literal ? new Set(literal) : undefined);

describe('env var references: examples', () => {
  it('substitutes references recursively', () => {
    const r = resolve({ HOST: 'db', PORT_DB: '5432', ADDR: '${HOST}:${PORT_DB}', URL: 'postgres://${ADDR}/app' });
    assert.deepEqual(r.problems, []);
    assert.equal(r.vars.ADDR, 'db:5432');
    assert.equal(r.vars.URL, 'postgres://db:5432/app');
  });

  it('keeps the keys in input order and leaves values without references alone', () => {
    const r = resolve({ B: 'x', A: '${B}y', C: 'plain' });
    assert.deepEqual(Object.keys(r.vars), ['B', 'A', 'C']);
    assert.deepEqual(r.vars, { B: 'x', A: 'xy', C: 'plain' });
  });

  it('reports an unknown key and leaves the reference text', () => {
    const r = resolve({ DATABASE_URL: 'postgres://${DB_HOST}/x', OTHER: '${DB_HOST}${DB_HOST}' });
    assert.equal(r.vars.DATABASE_URL, 'postgres://${DB_HOST}/x');
    assert.equal(r.vars.OTHER, '${DB_HOST}${DB_HOST}');
    assert.deepEqual(r.problems, ['DATABASE_URL references unknown variable ${DB_HOST}', 'OTHER references unknown variable ${DB_HOST}']);
  });

  it('reports a cycle once and leaves the references inside it unresolved', () => {
    const r = resolve({ A: 'a-${B}', B: 'b-${A}', C: 'c-${A}', D: '${E}', E: 'e' });
    assert.deepEqual(r.problems, ['cycle: A -> B -> A']);
    assert.equal(r.vars.A, 'a-${B}');
    assert.equal(r.vars.B, 'b-${A}');
    assert.equal(r.vars.C, 'c-a-${B}', 'a variable outside the cycle gets the cycle member as it stands');
    assert.equal(r.vars.D, 'e');
  });

  it('reports self references and longer cycles', () => {
    assert.deepEqual(resolve({ A: '${A}' }).problems, ['cycle: A -> A']);
    assert.equal(resolve({ A: 'x${A}' }).vars.A, 'x${A}');
    const r = resolve({ X: '1', A: '${B}', B: '${C}', C: '${A}${X}' });
    assert.deepEqual(r.problems, ['cycle: A -> B -> C -> A']);
    assert.equal(r.vars.C, '${A}1', 'references leaving the cycle still resolve');
  });

  it('treats $${ as an escaped ${ and every other $ literally', () => {
    const r = resolve({
      A: 'v',
      ESC: '$${A}',
      LONE: 'cost: $5 and $',
      DOUBLE: 'pa$$word',
      NOBRACE: '$A',
      UNCLOSED: '${A',
      BADNAME: '${1A} ${A-B} ${} ${ A }',
      NESTED: '${${A}}',
      MIXED: '$$${A}',
    });
    assert.deepEqual(r.problems, []);
    assert.equal(r.vars.ESC, '${A}');
    assert.equal(r.vars.LONE, 'cost: $5 and $');
    assert.equal(r.vars.DOUBLE, 'pa$$word');
    assert.equal(r.vars.NOBRACE, '$A');
    assert.equal(r.vars.UNCLOSED, '${A');
    assert.equal(r.vars.BADNAME, '${1A} ${A-B} ${} ${ A }');
    assert.equal(r.vars.NESTED, '${v}');
    assert.equal(r.vars.MIXED, '$${A}', '$ then the escape $${');
  });

  it('does not rescan substituted text', () => {
    const r = resolve({ SECRET: 's3cret', LITERAL: '$${SECRET}', USE: 'x${LITERAL}' });
    assert.equal(r.vars.LITERAL, '${SECRET}');
    assert.equal(r.vars.USE, 'x${SECRET}');
  });

  it('takes literal (system) values verbatim but lets other values reference them', () => {
    const r = resolve({ SECRET: 's', SVL_DEPLOYMENT_BRANCH: 'feat-${SECRET}', B: 'on ${SVL_DEPLOYMENT_BRANCH}' }, ['SVL_DEPLOYMENT_BRANCH']);
    assert.equal(r.vars.SVL_DEPLOYMENT_BRANCH, 'feat-${SECRET}');
    assert.equal(r.vars.B, 'on feat-${SECRET}');
    assert.deepEqual(r.problems, []);
  });

  it('caps exponential growth instead of running out of memory', () => {
    const vars: Record<string, string> = { V0: 'x'.repeat(1000) };
    for (let i = 1; i <= 40; i++) vars[`V${i}`] = `\${V${i - 1}}\${V${i - 1}}`;
    const r = resolve(vars);
    for (const v of Object.values(r.vars)) assert.ok(v.length <= MAX_RESOLVED_LENGTH + 16, `length ${v.length}`);
    assert.ok(
      r.problems.some((p) => /^V\d+ would be longer than \d+ characters; \$\{V\d+\} left unresolved$/.test(p)),
      r.problems.join('\n'),
    );
    assert.equal(r.vars.V5, 'x'.repeat(32000));
  });

  it('handles keys named like Object.prototype members', () => {
    const vars = Object.fromEntries([
      ['__proto__', 'p'],
      ['constructor', '${__proto__}'],
      ['toString', '${hasOwnProperty}'],
    ]);
    const r = resolve(vars);
    assert.equal(Object.getOwnPropertyDescriptor(r.vars, '__proto__')?.value, 'p');
    assert.equal(r.vars.constructor, 'p');
    assert.equal(r.vars.toString, '${hasOwnProperty}');
    assert.deepEqual(r.problems, ['toString references unknown variable ${hasOwnProperty}']);
  });

  it('survives a long reference chain (no recursion depth limit)', () => {
    const vars: Record<string, string> = { K0: 'end' };
    for (let i = 1; i <= 50_000; i++) vars[`K${i}`] = `\${K${i - 1}}`;
    const r = resolve(vars);
    assert.equal(r.vars.K50000, 'end');
    assert.deepEqual(r.problems, []);
  });

  it('parses values into text and references', () => {
    assert.deepEqual(parseValue('a${B}c$${D}$'), [{ text: 'a' }, { ref: 'B', raw: '${B}' }, { text: 'c${D}$' }]);
    assert.deepEqual(parseValue(''), []);
  });
});

// ---------------------------------------------------------------- properties

const KEYS = ['A', 'B', 'C', 'D', 'E', 'F', '_x1', '__proto__'];
/** Pieces values are made of: references (to defined or undefined keys), escapes, dollar noise and text. */
const piece = fc.oneof(
  fc.constantFrom(...KEYS, 'UNKNOWN', 'Z9').map((k) => '${' + k + '}'),
  fc.constantFrom('$', '$$', '$${', '${', '}', '{', '${1}', '${A', '$A', '${ A }'),
  fc.string({ maxLength: 6 }),
);
const value = fc.array(piece, { maxLength: 6 }).map((p) => p.join(''));
const graph = fc.dictionary(fc.constantFrom(...KEYS), value, { maxKeys: KEYS.length });

/** Does the reference graph (defined targets only) contain a cycle? Independent of the implementation. */
function hasCycle(vars: Record<string, string>): boolean {
  const m = new Map(Object.entries(vars));
  const refs = (k: string) => parseValue(m.get(k)!).flatMap((s) => ('ref' in s && m.has(s.ref) ? [s.ref] : []));
  const state = new Map<string, 1 | 2>();
  const dfs = (k: string): boolean => {
    state.set(k, 1);
    for (const r of refs(k)) {
      if (state.get(r) === 1) return true;
      if (!state.has(r) && dfs(r)) return true;
    }
    state.set(k, 2);
    return false;
  };
  return [...m.keys()].some((k) => !state.has(k) && dfs(k));
}

describe('env var references: properties', () => {
  it('terminates and never throws for arbitrary graphs; keys are kept', () => {
    fc.assert(
      fc.property(graph, fc.subarray(KEYS), (vars, literal) => {
        const r = resolveReferences(vars, new Set(literal));
        assert.deepEqual(Object.keys(r.vars), Object.keys(vars));
        for (const k of literal) if (k in vars) assert.equal(r.vars[k], vars[k]);
        for (const v of Object.values(r.vars)) assert.equal(typeof v, 'string');
        for (const p of r.problems) assert.equal(typeof p, 'string');
      }),
      { numRuns: 2000 },
    );
  });

  it('values without references are unchanged (no `${` in any value → identity, no problems)', () => {
    const plain = fc.dictionary(
      fc.string({ minLength: 1, maxLength: 8 }),
      fc.string({ maxLength: 40 }).filter((s) => !s.includes('${')),
    );
    fc.assert(
      fc.property(plain, (vars) => {
        const r = resolveReferences(vars);
        assert.deepEqual(Object.entries(r.vars), Object.entries(vars));
        assert.deepEqual(r.problems, []);
      }),
      { numRuns: 1000 },
    );
  });

  it('any text escaped with $${ resolves to itself', () => {
    fc.assert(
      fc.property(
        fc.string({ maxLength: 60 }),
        fc.array(piece, { maxLength: 8 }).map((p) => p.join('')),
        (a, b) => {
          for (const s of [a, b]) {
            const r = resolveReferences({ A: 'a', B: '${A}', V: s.replaceAll('${', () => '$${') });
            assert.equal(r.vars.V, s);
          }
        },
      ),
      { numRuns: 1000 },
    );
  });

  it('a cycle is reported if and only if the reference graph has one', () => {
    fc.assert(
      fc.property(graph, (vars) => {
        const r = resolveReferences(vars);
        assert.equal(
          r.problems.some((p) => p.startsWith('cycle: ')),
          hasCycle(vars),
        );
        for (const p of r.problems.filter((x) => x.startsWith('cycle: '))) {
          const path = p.slice(7).split(' -> ');
          assert.ok(path.length >= 2 && path[0] === path.at(-1), p);
        }
      }),
      { numRuns: 2000 },
    );
  });

  it('acyclic graphs resolve like naive recursive substitution, with problems only for unknown keys', () => {
    // Keys K0..Kn where Ki may only reference Kj with j < i (or unknown keys): never a cycle.
    const noise = fc.constantFrom('$', '$${X}', '-', '${NOPE}', 'é', '${K99');
    const valueAt = (i: number) =>
      fc
        .array(
          i === 0
            ? noise
            : fc.oneof(
                fc.integer({ min: 0, max: i - 1 }).map((j) => '${K' + j + '}'),
                noise,
              ),
          { maxLength: 4 },
        )
        .map((p) => p.join(''));
    const dag = fc.integer({ min: 1, max: 7 }).chain((n) => fc.tuple(...Array.from({ length: n }, (_, i) => valueAt(i))));
    fc.assert(
      fc.property(dag, (values) => {
        const vars = Object.fromEntries(values.map((v, i) => [`K${i}`, v]));
        const naive = (k: string): string =>
          parseValue(vars[k]!)
            .map((s) => ('ref' in s ? (s.ref in vars ? naive(s.ref) : s.raw) : s.text))
            .join('');
        const r = resolveReferences(vars);
        for (const k of Object.keys(vars)) assert.equal(r.vars[k], naive(k));
        for (const p of r.problems) assert.match(p, /^K\d+ references unknown variable \$\{NOPE\}$/);
      }),
      { numRuns: 1000 },
    );
  });

  it('the key pattern accepts exactly letters, digits and underscore, not starting with a digit', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 10 }), (s) => {
        const expected = s.length > 0 && /[A-Za-z_]/.test(s[0]!) && [...s].every((ch) => /[A-Za-z0-9_]/.test(ch));
        assert.equal(KEY_PATTERN.test(s), expected);
      }),
    );
  });
});
