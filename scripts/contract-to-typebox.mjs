#!/usr/bin/env node
// Developer scaffolding tool: prints TypeBox source for contract operations, so a new
// module starts from shapes that match the published v3 contract field for field.
// The printed code is a starting point that is committed and then owned by the module
// (descriptions are deliberately dropped: write them in your own words).
//
//   node scripts/contract-to-typebox.mjs '<regex on "METHOD /path">' > /tmp/out.ts
//
// Reads ../shared/spec/openapi-reference.json and openapi-additions.json (additions win).
import { readFileSync, existsSync } from 'node:fs';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const specDir = join(here, '../../shared/spec');
const docs = ['openapi-reference.json', 'openapi-additions.json']
  .map((f) => join(specDir, f))
  .filter(existsSync)
  .map((f) => JSON.parse(readFileSync(f, 'utf8')));
const filter = new RegExp(process.argv[2] ?? '.');
const METHODS = ['get', 'post', 'put', 'patch', 'delete'];

function deref(doc, node) {
  while (node && node.$ref) {
    const parts = node.$ref.replace(/^#\//, '').split('/');
    node = parts.reduce((cur, p) => cur?.[p], doc);
  }
  return node;
}

const ops = new Map();
for (const doc of docs) {
  for (const [path, item] of Object.entries(doc.paths)) {
    for (const m of METHODS) {
      if (!item[m]) continue;
      const key = `${m.toUpperCase()} ${path}`;
      if (!filter.test(key)) continue;
      ops.set(key, { doc, path, method: m.toUpperCase(), op: item[m], item });
    }
  }
}

const UUID_RE = /0-9a-fA-F\]\{8\}/;
const shapeCount = new Map();
const shapeName = new Map();

function objectKey(s) {
  return JSON.stringify(strip(s));
}
function strip(o) {
  if (Array.isArray(o)) return o.map(strip);
  if (o && typeof o === 'object') {
    const r = {};
    for (const [k, v] of Object.entries(o)) if (!['description', 'example', 'examples', 'title'].includes(k)) r[k] = strip(v);
    return r;
  }
  return o;
}

function countShapes(doc, s) {
  s = deref(doc, s);
  if (!s || typeof s !== 'object') return;
  if (s.type === 'object' && s.properties && Object.keys(s.properties).length >= 3) {
    const k = objectKey(s);
    shapeCount.set(k, (shapeCount.get(k) ?? 0) + 1);
  }
  for (const v of Object.values(s.properties ?? {})) countShapes(doc, v);
  if (s.items) countShapes(doc, s.items);
  for (const v of s.anyOf ?? s.oneOf ?? s.allOf ?? []) countShapes(doc, v);
}

const lit = (v) => JSON.stringify(v);
function opts(s, skip = []) {
  const o = {};
  for (const k of [
    'minimum',
    'maximum',
    'exclusiveMinimum',
    'exclusiveMaximum',
    'minLength',
    'maxLength',
    'minItems',
    'maxItems',
    'default',
    'format',
    'pattern',
    'uniqueItems',
  ]) {
    if (skip.includes(k)) continue;
    if (s[k] === undefined) continue;
    if (k === 'minimum' && s[k] === -9007199254740991) continue;
    if (k === 'maximum' && s[k] === 9007199254740991) continue;
    o[k] = s[k];
  }
  return Object.keys(o).length ? `, ${JSON.stringify(o)}` : '';
}

const named = [];
function gen(doc, s, hint, indent = '') {
  s = deref(doc, s);
  if (!s || Object.keys(strip(s)).length === 0) return 'Type.Unknown()';
  const variants = s.anyOf ?? s.oneOf;
  if (variants) {
    const nonNull = variants.filter((v) => deref(doc, v).type !== 'null');
    const hasNull = nonNull.length !== variants.length;
    const inner = nonNull.length === 1 ? gen(doc, nonNull[0], hint, indent) : `Type.Union([${nonNull.map((v) => gen(doc, v, hint, indent)).join(', ')}])`;
    return hasNull ? `Nullable(${inner})` : inner;
  }
  if (s.allOf) return `Type.Intersect([${s.allOf.map((v) => gen(doc, v, hint, indent)).join(', ')}])`;
  if (s.const !== undefined) return `Type.Literal(${lit(s.const)})`;
  if (Array.isArray(s.type)) {
    const nonNull = s.type.filter((t) => t !== 'null');
    const inner = gen(doc, { ...s, type: nonNull[0] }, hint, indent);
    return s.type.includes('null') ? `Nullable(${inner})` : inner;
  }
  switch (s.type) {
    case 'string':
      if (s.enum) return `StringEnum(${lit(s.enum)}${opts(s, ['format', 'pattern'])})`;
      if (s.format === 'uuid' || (s.pattern && UUID_RE.test(s.pattern))) return `Uuid(${opts(s, ['format', 'pattern']).slice(2)})`;
      if (s.format === 'date-time') return `DateTime(${opts(s, ['format', 'pattern']).slice(2)})`;
      if (s.format === 'email') return `Type.String(${opts(s, ['pattern']).slice(2)})`;
      return `Type.String(${opts(s).slice(2)})`;
    case 'integer':
      return `Type.Integer(${opts(s).slice(2)})`;
    case 'number':
      return `Type.Number(${opts(s).slice(2)})`;
    case 'boolean':
      return `Type.Boolean(${opts(s).slice(2)})`;
    case 'null':
      return 'Type.Null()';
    case 'array':
      return `Type.Array(${gen(doc, s.items, hint + 'Item', indent)}${opts(s)})`;
    case 'object': {
      const keys = Object.keys(s.properties ?? {})
        .sort()
        .join(',');
      if (keys === 'data,limit,offset,total' && deref(doc, s.properties.data).type === 'array')
        return `Paginated(${gen(doc, deref(doc, s.properties.data).items, hint.replace(/Response$/, '') + 'Item', indent)})`;
      if (keys === 'message' && s.additionalProperties === false && (s.required ?? []).includes('message')) return 'MessageResponse';
      if (!s.properties) {
        if (s.additionalProperties && typeof s.additionalProperties === 'object')
          return `Type.Record(Type.String(), ${gen(doc, s.additionalProperties, hint, indent)})`;
        return 'Type.Object({})';
      }
      const key = objectKey(s);
      if ((shapeCount.get(key) ?? 0) >= 2) {
        if (!shapeName.has(key)) {
          shapeName.set(key, null);
          const body = genObject(doc, s, hint, '');
          const name = uniqueName(hint);
          shapeName.set(key, name);
          named.push(`export const ${name} = ${body};`);
        }
        const n = shapeName.get(key);
        if (n) return n;
      }
      return genObject(doc, s, hint, indent);
    }
    default:
      return 'Type.Unknown()';
  }
}
const usedNames = new Set();
function uniqueName(base) {
  let n = base;
  let i = 2;
  while (usedNames.has(n)) n = `${base}${i++}`;
  usedNames.add(n);
  return n;
}
function genObject(doc, s, hint, indent) {
  const req = new Set(s.required ?? []);
  const lines = [];
  const inner = indent + '  ';
  for (const [k, v] of Object.entries(s.properties)) {
    const g = gen(doc, v, hint + pascal(k), inner);
    lines.push(`${inner}${/^[a-z_][a-z0-9_]*$/i.test(k) ? k : lit(k)}: ${req.has(k) ? g : `Type.Optional(${g})`},`);
  }
  for (const k of req) if (!(k in s.properties)) lines.push(`${inner}${k}: Type.String(), // listed as required by the contract without a definition`);
  const ap = s.additionalProperties === false ? ', { additionalProperties: false }' : '';
  return `Type.Object({\n${lines.join('\n')}\n${indent}}${ap})`;
}
// Summaries are derived from the operation id, never copied from the reference prose.
const sentence = (id) => {
  const w = id
    .replace(/V3$/, '')
    .replace(/([A-Z])/g, ' $1')
    .toLowerCase()
    .trim();
  return w[0].toUpperCase() + w.slice(1);
};
const pascal = (s) => s.replace(/(^|[_\-/{}\s])+([a-z0-9])/gi, (_, __, c) => c.toUpperCase()).replace(/[^A-Za-z0-9]/g, '');

for (const { doc, op } of ops.values()) {
  const body = deref(doc, op.requestBody)?.content?.['application/json']?.schema;
  if (body) countShapes(doc, body);
  for (const [code, r] of Object.entries(op.responses ?? {})) if (code.startsWith('2')) countShapes(doc, deref(doc, r)?.content?.['application/json']?.schema);
}

const out = [];
for (const { doc, path, method, op, item } of ops.values()) {
  const base = pascal(op.operationId.replace(/V3$/, ''));
  const params = [...(item.parameters ?? []), ...(op.parameters ?? [])].map((p) => deref(doc, p));
  const section = (where) => {
    let ps = params.filter((p) => p.in === where);
    if (!ps.length) return null;
    if (where === 'path' && ps.length === 1 && ps[0].name === 'id' && deref(doc, ps[0].schema)?.format === 'uuid') return 'IdParams';
    if (where === 'query' && ps.length === 2 && ps.every((p) => p.name === 'limit' || p.name === 'offset')) return 'PageQuery';
    const paged = where === 'query' && ps.some((p) => p.name === 'limit') && ps.some((p) => p.name === 'offset');
    if (paged) ps = ps.filter((p) => p.name !== 'limit' && p.name !== 'offset');
    const props = ps.map(
      (p) => `    ${p.name}: ${p.required ? '' : 'Type.Optional('}${gen(doc, p.schema, base + pascal(p.name), '    ')}${p.required ? '' : ')'},`,
    );
    if (paged) props.unshift('    ...PaginationQuery,');
    return `Type.Object({\n${props.join('\n')}\n  })`;
  };
  const rb = deref(doc, op.requestBody);
  const bodySchema = rb?.content?.['application/json']?.schema;
  const successes = Object.entries(op.responses ?? {}).filter(([c]) => c.startsWith('2'));
  const [code, resp] = successes[0] ?? ['204', {}];
  const respSchema = deref(doc, resp)?.content?.['application/json']?.schema;
  const errors = Object.keys(op.responses ?? {})
    .filter((c) => !c.startsWith('2'))
    .map(Number);
  const lines = [`export const ${base[0].toLowerCase() + base.slice(1)}Contract = {`];
  lines.push(
    `  operationId: ${lit(op.operationId)},`,
    `  method: ${lit(method)},`,
    `  path: ${lit(path)},`,
    `  summary: ${lit(sentence(op.operationId))},`,
    `  tags: ${lit(op.tags ?? [])},`,
  );
  if (op.security && op.security.length === 0) lines.push('  public: true,');
  const pp = section('path');
  if (pp) lines.push(`  params: ${pp},`);
  const qq = section('query');
  if (qq) lines.push(`  querystring: ${qq},`);
  if (bodySchema) lines.push(`  body: ${gen(doc, bodySchema, base + 'Body', '  ')},`, `  bodyRequired: ${!!rb.required},`);
  lines.push(`  success: ${code},`);
  if (respSchema) lines.push(`  response: ${gen(doc, respSchema, base + 'Response', '  ')},`);
  lines.push(`  errors: ${lit(errors)},`, '} as const;');
  out.push(lines.join('\n'));
}
console.log("import { Type } from '@sinclair/typebox';");
console.log(
  "import { DateTime, IdParams, MessageResponse, Nullable, PageQuery, Paginated, PaginationQuery, StringEnum, Uuid } from '../../shared/schemas/common.js';\n",
);
console.log(named.join('\n\n'));
console.log();
console.log(out.join('\n\n'));
