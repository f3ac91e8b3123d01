// Hostname rules: what a client may ask for as a domain name, in the one form it is stored and
// compared in (lower-case ASCII, internationalized names as punycode, no trailing dot).
import { isIP } from 'node:net';
import { domainToASCII } from 'node:url';
import { badRequest } from '../../shared/errors.js';

export const MAX_HOSTNAME = 253;
const LABEL = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;

export interface Hostname {
  /** What is stored and must be unique: `app.example.com`, or `*.example.com` for a wildcard. */
  hostname: string;
  /** The name without the wildcard label (where the ownership record lives). */
  base: string;
  wildcard: boolean;
}

const invalid = (input: string, why: string) => badRequest(`"${input}" is not a valid domain name: ${why}`);

/**
 * Normalizes a requested domain name. A wildcard (`*.example.com`, or `example.com` with
 * `wildcard`) is allowed only when `wildcard` is set; IP literals, schemes, ports, paths, empty or
 * over-long labels and names under `reserved` suffixes are refused with 400.
 */
export function parseHostname(input: string, opts: { wildcard?: boolean; reserved?: readonly string[] } = {}): Hostname {
  let s = input.trim().toLowerCase();
  if (s.endsWith('.')) s = s.slice(0, -1);
  if (!s) throw invalid(input, 'it is empty');
  if (/[\s/@?#]|:\/\/|^\[|\]$/.test(s) || s.includes(':')) {
    if (isIP(s.replace(/^\[|\]$/g, ''))) throw invalid(input, 'IP addresses cannot be used as domains');
    throw invalid(input, 'give a bare hostname such as app.example.com, without scheme, port or path');
  }
  let wildcard = false;
  if (s.startsWith('*.')) {
    if (!opts.wildcard) throw invalid(input, 'a wildcard name (*.) requires is_wildcard: true');
    s = s.slice(2);
    wildcard = true;
  } else if (opts.wildcard) wildcard = true;
  if (s.includes('*')) throw invalid(input, "'*' is allowed only as the whole first label of a wildcard domain");
  if (isIP(s)) throw invalid(input, 'IP addresses cannot be used as domains');
  const ascii = domainToASCII(s);
  // Some forms (full-width digits, `127.1`, `0x7f.1`) normalize to an IPv4 address.
  if (isIP(ascii)) throw invalid(input, 'IP addresses cannot be used as domains');
  if (/^\d+$/.test(s.slice(s.lastIndexOf('.') + 1))) throw invalid(input, 'the top-level label cannot be numeric');
  if (!ascii) throw invalid(input, 'it contains characters that are not allowed in a hostname');
  const labels = ascii.split('.');
  if (labels.length < 2) throw invalid(input, 'it needs at least two labels (e.g. example.com)');
  for (const l of labels) {
    if (!l) throw invalid(input, 'it has an empty label');
    if (l.length > 63) throw invalid(input, `the label "${l.slice(0, 20)}…" is longer than 63 characters`);
    if (!LABEL.test(l)) throw invalid(input, `the label "${l}" may contain only letters, digits and inner hyphens`);
  }
  if (/^\d+$/.test(labels.at(-1)!)) throw invalid(input, 'the top-level label cannot be numeric');
  const hostname = wildcard ? `*.${ascii}` : ascii;
  if (hostname.length > MAX_HOSTNAME) throw invalid(input, `it is longer than ${MAX_HOSTNAME} characters`);
  for (const r of opts.reserved ?? []) {
    if (ascii === r || ascii.endsWith(`.${r}`)) throw invalid(input, `names under ${r} are reserved for system domains`);
  }
  return { hostname, base: ascii, wildcard };
}

/** A single DNS label (the subdomain part of a system domain), lower-cased; 400 when not one. */
export function parseLabel(input: string): string {
  const ascii = domainToASCII(input.trim().toLowerCase());
  if (!ascii || ascii.includes('.') || !LABEL.test(ascii)) {
    throw badRequest(`"${input}" is not a valid subdomain name: use 1 to 63 letters, digits and inner hyphens`);
  }
  return ascii;
}
