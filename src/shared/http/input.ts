// Limits every request body obeys before any operation sees it, applied once by the JSON body
// parser (src/server.ts) rather than per schema:
//   - nesting deeper than `maxDepth` arrays/objects            -> 400 (checked on the text, before parsing)
//   - a NUL character (\u0000) in any string or property name  -> 400 (PostgreSQL text cannot hold it)
//   - a string or property name longer than `maxString` chars  -> 400 (contract limits are lower still)
//   - a non-finite number (`1e400` parses to Infinity)         -> 400
import { ApiError } from '../errors.js';

export interface InputLimits {
  /** Deepest nesting of arrays and objects in a JSON body (SLIPWAY_MAX_JSON_DEPTH). */
  maxDepth: number;
  /** Longest string or property name in a JSON body, in UTF-16 code units (SLIPWAY_MAX_STRING_LENGTH). */
  maxString: number;
}

export const DEFAULT_INPUT_LIMITS: InputLimits = { maxDepth: 64, maxString: 64 * 1024 };

const bad = (message: string) => new ApiError(400, message);

/** The deepest nesting of `[`/`{` in JSON text (brackets inside strings do not count); stops past `limit`. */
export function jsonDepth(text: string, limit: number): number {
  let depth = 0;
  let max = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 92 /* \ */) i++;
      else if (c === 34 /* " */) inString = false;
    } else if (c === 34) inString = true;
    else if (c === 91 /* [ */ || c === 123 /* { */) {
      if (++depth > max && (max = depth) > limit) return max;
    } else if (c === 93 /* ] */ || c === 125 /* } */) depth--;
  }
  return max;
}

function checkString(s: string, where: string, limits: InputLimits): void {
  if (s.length > limits.maxString) throw bad(`The request body has a string longer than ${limits.maxString} characters at ${where}`);
  if (s.includes('\u0000')) throw bad(`The request body has a NUL character (\\u0000) at ${where}`);
}

/** Throws a 400 when a parsed JSON value breaks the limits (depth already checked on the text). */
export function checkJsonValue(value: unknown, limits: InputLimits): void {
  // Iterative walk: the depth is bounded, but the work should not depend on the call stack either.
  const stack: [unknown, string][] = [[value, 'body']];
  while (stack.length) {
    const [v, where] = stack.pop()!;
    if (typeof v === 'string') checkString(v, where, limits);
    else if (typeof v === 'number') {
      if (!Number.isFinite(v)) throw bad(`The request body has a number out of range (not finite) at ${where}`);
    } else if (Array.isArray(v)) {
      for (let i = 0; i < v.length; i++) stack.push([v[i], `${where}[${i}]`]);
    } else if (v !== null && typeof v === 'object') {
      for (const [k, x] of Object.entries(v)) {
        checkString(k, `${where} (a property name)`, limits);
        stack.push([x, `${where}.${k}`]);
      }
    }
  }
}

/** Parses a JSON request body under the limits; 400 with the contract's error body otherwise. */
export function parseJsonBody(text: string, limits: InputLimits): unknown {
  if (jsonDepth(text, limits.maxDepth) > limits.maxDepth) throw bad(`The request body is nested deeper than ${limits.maxDepth} levels`);
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw bad('The request body is not valid JSON');
  }
  checkJsonValue(value, limits);
  return value;
}
