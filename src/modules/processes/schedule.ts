// Cron schedules and time zones of cron processes: validation, canonical IANA names, next fire times.
import { Cron } from 'croner';
import { badRequest } from '../../shared/errors.js';

let zoneNames: Map<string, string> | undefined;

/**
 * The IANA name of a time zone as stored and shown (`utc` -> `UTC`, `europe/paris` -> `Europe/Paris`),
 * or null when the runtime does not know it. Valid aliases (`Asia/Kolkata`, `America/Argentina/Buenos_Aires`)
 * keep the caller's spelling rather than ICU's canonical link target.
 */
export function canonicalTimeZone(tz: string): string | null {
  const name = tz.trim();
  if (!name || /^[+-]?\d/.test(name)) return null;
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: name });
  } catch {
    return null;
  }
  zoneNames ??= new Map(['UTC', ...Intl.supportedValuesOf('timeZone')].map((z) => [z.toLowerCase(), z]));
  return zoneNames.get(name.toLowerCase()) ?? name;
}

function cronOf(schedule: string, timeZone: string): Cron {
  return new Cron(schedule, { mode: '5-or-6-parts', timezone: timeZone, paused: true });
}

/** Validates a cron expression (5 fields, or 6 with seconds first; @daily-style nicknames too). */
export function validateSchedule(schedule: string, timeZone: string): void {
  const s = schedule.trim();
  if (!s) throw badRequest('schedule must be a cron expression such as "0 3 * * *" (5 fields, or 6 with seconds first)');
  let next: Date | null;
  try {
    next = cronOf(s, timeZone).nextRun();
  } catch (e) {
    throw badRequest(
      `schedule "${schedule}" is not a valid cron expression (5 fields, or 6 with seconds first): ${(e as Error).message.replace(/^CronPattern: /, '')}`,
    );
  }
  if (!next) throw badRequest(`schedule "${schedule}" never fires`);
}

/** The first fire of the schedule strictly after `after`, in the process's time zone. */
export function nextFire(schedule: string, timeZone: string, after: Date): Date | null {
  try {
    return cronOf(schedule.trim(), timeZone).nextRun(after);
  } catch {
    return null;
  }
}
