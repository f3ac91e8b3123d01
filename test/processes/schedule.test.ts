// Cron expressions and time zones (src/modules/processes/service.ts), without a server.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { canonicalTimeZone, nextFire, validateSchedule } from '../../src/modules/processes/schedule.js';

describe('cron schedules', () => {
  it('accepts 5-field and 6-field (seconds first) expressions and nicknames', () => {
    for (const s of ['* * * * *', '0 3 * * MON-FRI', '*/15 9-17 * * 1-5', '0 0 1 1 *', '*/1 * * * * *', '30 0 12 * * *', '@daily', '@hourly'])
      validateSchedule(s, 'UTC');
  });

  it('rejects malformed expressions, out-of-range fields, 7 fields, and schedules that never fire', () => {
    for (const s of ['', '   ', '* * * *', '* * * * * * *', '61 * * * *', '* 24 * * *', '* * 32 * *', 'every minute', '0 0 30 2 *']) {
      assert.throws(
        () => validateSchedule(s, 'UTC'),
        (e: { status?: number }) => e.status === 400,
        s,
      );
    }
  });

  it('computes the next fire in the time zone of the process', () => {
    const winter = new Date('2026-01-15T12:00:00Z');
    assert.equal(nextFire('0 9 * * *', 'UTC', winter)?.toISOString(), '2026-01-16T09:00:00.000Z');
    assert.equal(nextFire('0 9 * * *', 'America/New_York', winter)?.toISOString(), '2026-01-15T14:00:00.000Z');
    assert.equal(nextFire('0 9 * * *', 'Asia/Tokyo', winter)?.toISOString(), '2026-01-16T00:00:00.000Z');
    // Daylight saving time moves the UTC instant, not the local time.
    assert.equal(nextFire('0 9 * * *', 'America/New_York', new Date('2026-07-15T12:00:00Z'))?.toISOString(), '2026-07-15T13:00:00.000Z');
  });

  it('fires strictly after the given instant, down to seconds', () => {
    const t = new Date('2026-01-15T12:00:00.000Z');
    assert.equal(nextFire('*/1 * * * * *', 'UTC', t)?.toISOString(), '2026-01-15T12:00:01.000Z');
    assert.equal(nextFire('* * * * *', 'UTC', t)?.toISOString(), '2026-01-15T12:01:00.000Z');
    assert.equal(nextFire('0 0 30 2 *', 'UTC', t), null);
  });
});

describe('time zones', () => {
  it('canonicalizes IANA names and rejects anything else', () => {
    assert.equal(canonicalTimeZone('UTC'), 'UTC');
    assert.equal(canonicalTimeZone('utc'), 'UTC');
    assert.equal(canonicalTimeZone('europe/paris'), 'Europe/Paris');
    assert.equal(canonicalTimeZone('America/Argentina/Buenos_Aires'), 'America/Argentina/Buenos_Aires', 'aliases keep their spelling');
    assert.equal(canonicalTimeZone('Asia/Kolkata'), 'Asia/Kolkata');
    for (const tz of ['', ' ', 'Mars/Olympus', '+01:00', '-0500', '5', 'Not A Zone']) assert.equal(canonicalTimeZone(tz), null, tz);
  });
});
