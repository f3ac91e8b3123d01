// Lint: the boundaries between modules. Reads every relative import (types too) between folders of
// src/modules and fails when
// - a module imports another module's file other than its public entry (`<module>/index.ts`), or
// - src/shared imports a module (shared machinery knows no module; modules register with it), or
// - a module builds a query outside its storage files (`storage.ts`, `<area>-storage.ts`): services
//   state rules and call storage functions, or
// - the module graph has a cycle (naming the imports that close it): a module that needs something
//   from a module built on it declares a port (AppContext.ports) that the other provides.
// KNOWN lists back-edges still to be removed; an entry that no longer exists fails too, so the
// list only shrinks.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

const KNOWN = new Set([]);

const root = resolve(fileURLToPath(new URL('../src/modules', import.meta.url)));
const files = [];
(function walk(d) {
  for (const n of readdirSync(d)) {
    const p = join(d, n);
    if (statSync(p).isDirectory()) walk(p);
    else if (p.endsWith('.ts')) files.push(p);
  }
})(root);

const moduleOf = (p) => relative(root, p).split(sep)[0];
/** module -> module -> the first import that makes the edge */
const edges = new Map();
const problems = [];
for (const f of files) {
  for (const m of readFileSync(f, 'utf8').matchAll(/^\s*(?:import|export)\s[^'"]*?from\s+'(\.[^']+)'/gm)) {
    const target = resolve(dirname(f), m[1]);
    if (!target.startsWith(root + sep)) continue;
    const [a, b] = [moduleOf(f), moduleOf(target)];
    if (a === b || /\.[jt]s$/.test(a) || /\.[jt]s$/.test(b)) continue;
    if (relative(join(root, b), target) !== 'index.js')
      problems.push(`${relative(root, f)} imports ${m[1]}: import another module only through its public entry ${b}/index.ts`);
    if (!edges.has(a)) edges.set(a, new Map());
    if (!edges.get(a).has(b)) edges.get(a).set(b, `${relative(root, f)} imports ${m[1]}`);
  }
}

const QUERY = /\.(selectFrom|insertInto|updateTable|deleteFrom)\(|(?<![.\w])sql`|\breusable(By)?\(/;
for (const f of files) {
  if (/(^|-)storage\.ts$/.test(f.split(sep).pop())) continue;
  const lines = readFileSync(f, 'utf8').split('\n');
  const at = lines.findIndex((l) => QUERY.test(l));
  if (at >= 0) problems.push(`${relative(root, f)}:${at + 1} builds a query: SQL lives in the module's storage files`);
}

const shared = resolve(root, '../shared');
(function walk(d) {
  for (const n of readdirSync(d)) {
    const p = join(d, n);
    if (statSync(p).isDirectory()) walk(p);
    else if (p.endsWith('.ts'))
      for (const m of readFileSync(p, 'utf8').matchAll(/^\s*(?:import|export)\s[^'"]*?from\s+'(\.[^']+)'/gm))
        if (resolve(dirname(p), m[1]).startsWith(root + sep))
          problems.push(`src/shared/${relative(shared, p)} imports ${m[1]}: shared machinery imports no module`);
  }
})(shared);

for (const k of KNOWN) {
  const [a, b] = k.split(' -> ');
  if (edges.get(a)?.has(b)) edges.get(a).delete(b);
  else problems.push(`${k} is listed in KNOWN but no longer imported: remove it from the list`);
}

// Strongly connected components (Tarjan): each of more than one module is a cycle.
let counter = 0;
const index = new Map();
const low = new Map();
const stack = [];
const onStack = new Set();
function visit(v) {
  index.set(v, counter);
  low.set(v, counter++);
  stack.push(v);
  onStack.add(v);
  for (const w of edges.get(v)?.keys() ?? []) {
    if (!index.has(w)) {
      visit(w);
      low.set(v, Math.min(low.get(v), low.get(w)));
    } else if (onStack.has(w)) low.set(v, Math.min(low.get(v), index.get(w)));
  }
  if (low.get(v) !== index.get(v)) return;
  const component = [];
  let w;
  do {
    w = stack.pop();
    onStack.delete(w);
    component.push(w);
  } while (w !== v);
  if (component.length < 2) return;
  const why = component.flatMap((a) => [...(edges.get(a) ?? [])].filter(([b]) => component.includes(b)).map(([b, imp]) => `  ${a} -> ${b}: ${imp}`));
  problems.push(`modules in a cycle: ${component.join(', ')}\n${why.join('\n')}`);
}
for (const v of edges.keys()) if (!index.has(v)) visit(v);

if (problems.length) {
  console.error(problems.join('\n'));
  process.exit(1);
}
console.log(`module boundaries: entry files only, no cycles (${files.length} files, ${KNOWN.size} known back-edges left)`);
