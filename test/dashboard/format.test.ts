// The dashboard's shared formatting without a browser: every status enum of the served OpenAPI
// document has words, numbers carry their units, chart ticks share one scale and never repeat,
// dates read relative to now.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { modules } from '../../src/modules/index.js';
import { buildOpenApi } from '../../src/shared/http/openapi.js';
import { formatDuration, formatTicks, formatValue, relativeTime } from '../../web/src/format.js';
import { STATUS, statusWords } from '../../web/src/status.js';

/** Every enum value of a `status` or `backup_status` property anywhere in the document. */
function statusEnums(doc: unknown): Set<string> {
  const out = new Set<string>();
  const enums = (s: any): void => {
    if (!s || typeof s !== 'object') return;
    if (Array.isArray(s.enum)) for (const v of s.enum) out.add(String(v));
    for (const k of ['anyOf', 'oneOf', 'allOf']) if (Array.isArray(s[k])) s[k].forEach(enums);
  };
  const walk = (n: any): void => {
    if (!n || typeof n !== 'object') return;
    if (n.properties && typeof n.properties === 'object')
      for (const [k, v] of Object.entries(n.properties)) if (k === 'status' || k === 'backup_status') enums(v);
    for (const v of Object.values(n)) walk(v);
  };
  walk(doc);
  return out;
}

describe('dashboard formatting', () => {
  it('has words for every status the API can report', () => {
    const doc = buildOpenApi(
      modules.flatMap((m) => m.operations),
      'http://localhost/v3',
    );
    const all = statusEnums(doc);
    assert.ok(all.has('deploymentSuccess') && all.size > 20, 'the walk finds the status enums');
    const missing = [...all].filter((s) => !(s in STATUS));
    assert.deepEqual(missing, []);
    assert.deepEqual(statusWords('deploymentSuccess'), { words: 'Deployed', tone: 'ok' });
    assert.equal(statusWords('somethingNew').words, 'somethingNew');
  });

  it('formats bytes, cores, percentages, money and durations with units', () => {
    assert.equal(formatValue(84915798.41, 'bytes'), '80.98 MB');
    assert.equal(formatValue(512, 'bytes'), '512 B');
    assert.equal(formatValue(3 * 1024 ** 3, 'bytes'), '3 GB');
    assert.equal(formatValue(0.0123, 'cores'), '0.01 cores');
    assert.equal(formatValue(1, 'cores'), '1 core');
    assert.equal(formatValue(42.5, 'percent'), '42.5%');
    assert.equal(formatValue(100, 'usd'), '$100.00');
    assert.equal(formatDuration(850), '850 ms');
    assert.equal(formatDuration(1500), '1.5 s');
    assert.equal(formatDuration(125_000), '2 min 5 s');
    assert.equal(formatDuration(3_840_000), '1 h 4 min');
  });

  it('labels chart ticks on one scale, distinct from each other', () => {
    // The CPU axis that read 0.01, 0.01, 0.01.
    const cpu = formatTicks([0.01, 0.012, 0.014, 0.016], 'cores');
    assert.equal(new Set(cpu).size, 4, cpu.join(' | '));
    assert.deepEqual(cpu, ['0.01 cores', '0.012 cores', '0.014 cores', '0.016 cores']);
    // Memory in bytes: one unit for the whole axis, short labels.
    const mem = formatTicks([0, 50_000_000, 100_000_000], 'bytes');
    assert.deepEqual(mem, ['0 MB', '48 MB', '95 MB']);
    assert.ok(mem.every((l) => l.length <= 8));
    assert.deepEqual(formatTicks([0, 512, 1024, 1536], 'bytes'), ['0 KB', '0.5 KB', '1 KB', '1.5 KB']);
    assert.deepEqual(formatTicks([0, 50, 100], 'ms'), ['0 ms', '50 ms', '100 ms']);
  });

  it('reads dates relative to now', () => {
    const now = Date.parse('2026-11-28T12:00:00Z');
    assert.equal(relativeTime('2026-11-28T11:57:00Z', now), '3 minutes ago');
    assert.equal(relativeTime('2026-11-28T11:59:58Z', now), 'now');
    assert.equal(relativeTime('2026-11-28T14:00:00Z', now), 'in 2 hours');
    assert.equal(relativeTime('2026-11-25T12:00:00Z', now), '3 days ago');
  });
});
