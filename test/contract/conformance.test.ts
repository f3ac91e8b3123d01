// Pins the served OpenAPI document to the published contract. The other suites validate responses
// against the document this server publishes (test/helpers/contract.ts), so a change to that
// document would go unnoticed there; here the document is compared with the reference contract by
// ../shared/tools/conformance.mjs, and every schema difference in an operation Slipway serves
// fails unless test/contract-allowlist.json lists it with a reason. Allow-list entries that no
// longer match a difference fail too. Operations not implemented yet are only counted.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { useServer } from '../helpers/server.js';

const REPO_ROOT = fileURLToPath(new URL('../..', import.meta.url));
const SCRIPT = resolve(REPO_ROOT, '..', 'shared', 'tools', 'conformance.mjs');
const ALLOW_LIST = resolve(REPO_ROOT, 'test', 'contract-allowlist.json');
const CI = process.env.CI === 'true';
const present = existsSync(SCRIPT);

/** One difference the conformance script reports: the operation (`METHOD /path/{}`) and its line. */
interface Difference {
  operation: string;
  difference: string;
}
interface AllowEntry extends Difference {
  reason: string;
}
interface Report {
  total: number;
  covered: number;
  missing: string[];
  extra: string[];
  diffs: Record<string, string[]>;
}

/** The script's operation key: upper-case method, path parameters as `{}`, no trailing slash. */
function operationKey(op: string): string {
  const [method = '', path = ''] = op.trim().split(/\s+/, 2);
  return `${method.toUpperCase()} ${path.replace(/\/+$/, '').replace(/\{[^}]+\}/g, '{}')}`;
}

function readAllowList(): AllowEntry[] {
  const list: unknown = JSON.parse(readFileSync(ALLOW_LIST, 'utf8'));
  assert.ok(Array.isArray(list), `${ALLOW_LIST}: an array of {operation, difference, reason}`);
  return list.map((e, i) => {
    const where = `${ALLOW_LIST}[${i}]`;
    assert.ok(e && typeof e === 'object' && !Array.isArray(e), `${where}: an object`);
    assert.deepEqual(Object.keys(e).sort(), ['difference', 'operation', 'reason'], `${where}: exactly operation, difference and reason`);
    for (const k of ['operation', 'difference', 'reason'] as const)
      assert.ok(typeof e[k] === 'string' && e[k].trim().length > 0, `${where}: ${k} is a non-empty string`);
    return { operation: operationKey(e.operation), difference: e.difference.trim(), reason: e.reason };
  });
}

const show = (d: Difference[]) => d.map((x) => `  ${JSON.stringify({ operation: x.operation, difference: x.difference })}`).join('\n');

const TITLE = 'the served document differs from the published contract only as the allow-list says';

describe('contract conformance [sqlite]', () => {
  if (!present) {
    // Outside a checkout with ../shared the comparison cannot run: a skip locally, a failure in CI.
    const missing = `the conformance script ${SCRIPT} is missing (not a checkout with the shared specification in ../shared)`;
    it(TITLE, { skip: CI ? false : `${missing}; CI=true makes this a failure` }, () => {
      assert.fail(`${missing}: CI=true requires it`);
    });
    return;
  }
  const s = useServer();

  it(TITLE, { timeout: 60_000 }, async (t) => {
    const { stdout } = await promisify(execFile)(process.execPath, [SCRIPT, '--spec', `${s.baseUrl}/v3/openapi.json`, '--json'], {
      maxBuffer: 64 * 1024 * 1024,
    });
    const report = JSON.parse(stdout) as Report;
    assert.ok(report.covered > 0, `no operation of the contract is served: ${stdout.slice(0, 500)}`);

    const found: Difference[] = Object.entries(report.diffs).flatMap(([operation, lines]) => lines.map((difference) => ({ operation, difference })));
    const allow = readAllowList();
    const same = (a: Difference, b: Difference) => a.operation === b.operation && a.difference === b.difference;
    const duplicates = allow.filter((a, i) => allow.findIndex((b) => same(a, b)) !== i);
    const unexpected = found.filter((d) => !allow.some((a) => same(a, d)));
    const stale = allow.filter((a) => !found.some((d) => same(a, d)));

    t.diagnostic(
      `contract operations served: ${report.covered}/${report.total}; not implemented yet: ${report.missing.length}; beyond the contract: ${report.extra.length}`,
    );
    t.diagnostic(`schema differences: ${found.length} (${found.length - unexpected.length} allowed by ${ALLOW_LIST})`);

    assert.deepEqual(duplicates, [], `duplicate allow-list entries:\n${show(duplicates)}`);
    assert.deepEqual(
      unexpected,
      [],
      `${unexpected.length} schema difference(s) from the published contract; fix the server, or list them with a reason in ${ALLOW_LIST}:\n${show(unexpected)}`,
    );
    assert.deepEqual(stale, [], `${stale.length} allow-list entr(y/ies) no longer match a difference; remove them from ${ALLOW_LIST}:\n${show(stale)}`);
  });
});
