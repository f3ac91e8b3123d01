// Copies of the watched repositories: one bare mirror per repository under the data directory
// (`<data dir>/git-mirrors/<hash of the normalised address>`), fetched once per poll that saw a
// followed head move (however many services and companies watch the repository), and by a webhook
// push whose payload does not list its files (changes.ts). They tell what a push changed
// (`git diff --name-only old new`), so static sites' deploy paths apply to every push, and give
// the new head's message and author. Fetches into one mirror run one at a time.
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { AppContext } from '../../shared/context.js';

const exec = promisify(execFile);

/** Git with no terminal prompt and no credential helper asking (a repository that needs credentials fails). */
export const gitEnv = () => ({ ...process.env, GIT_TERMINAL_PROMPT: '0', GIT_ASKPASS: 'true', GIT_SSH_COMMAND: 'ssh -o BatchMode=yes' });

const git = async (cwd: string, args: string[], timeout = 30_000, access: Record<string, string> = {}) =>
  (await exec('git', args, { cwd, timeout, maxBuffer: 64 * 1024 * 1024, env: { ...gitEnv(), ...access } })).stdout;

/** `text` with the user info (user, password or token) of every address in it taken out. */
export const withoutUserInfo = (text: string) => text.replace(/([a-z][a-z0-9+.-]*:\/\/)[^/@\s]*@/gi, '$1');

/**
 * Git's answer to a command that failed, fit to show a user (a poll's error delivery): its `fatal:`
 * / `error:` lines (or the first ones), with no credential left in them — the access's header and
 * token in any form, an address's user info, an `Authorization` header — at most 500 characters.
 */
export function gitFailure(e: unknown, access: Record<string, string> = {}): string {
  const err = e as { stderr?: string; message?: string; killed?: boolean; signal?: string; code?: unknown };
  if (err.killed || err.signal === 'SIGTERM') return 'git did not answer in time';
  if (err.code === 'ENOENT') return 'git is not installed on the server';
  const lines = String(err.stderr || err.message || '')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith('Command failed'));
  const told = lines.filter((l) => /^(fatal|error|remote):/i.test(l));
  let text = (told.length ? told : lines).slice(0, 3).join(' ') || 'git failed';
  // The token in every form git or a server could echo it: the header, its base64 and the decoded user:token.
  const secrets: string[] = [];
  for (const [k, v] of Object.entries(access)) {
    if (!k.startsWith('GIT_CONFIG_VALUE_')) continue;
    const b64 = v.replace(/^Authorization:\s*Basic\s+/i, '');
    const plain = Buffer.from(b64, 'base64').toString();
    const token = plain.slice(plain.indexOf(':') + 1);
    secrets.push(v, b64, plain, token, encodeURIComponent(token));
  }
  for (const x of secrets.filter((x) => x.length >= 4).sort((a, b) => b.length - a.length)) text = text.split(x).join('[redacted]');
  text = withoutUserInfo(text).replace(/(authorization|extraheader)\s*[:=]\s*\S+(\s+\S+)?/gi, '$1: [redacted]');
  return text.length > 500 ? `${text.slice(0, 499)}…` : text;
}

export const mirrorsRoot = (app: AppContext) => join(app.config.dataDir, 'git-mirrors');
const dirName = (key: string) => createHash('sha256').update(key).digest('hex').slice(0, 32);

export interface Mirror {
  /** The files changed from `old` to `next`; null when they cannot be told (no `old`, or `old` is not an ancestor of `next`: a force-push). */
  changed(old: string | undefined, next: string): Promise<string[] | null>;
  /** The commit's message and author (nulls when unknown). */
  describe(sha: string): Promise<{ message: string | null; author: string | null }>;
}

/** The fetch running into each mirror (by directory): the next one waits for it. */
const fetching = new Map<string, Promise<unknown>>();

/** Runs `fn` once the fetches into `dir` queued before it ended. */
async function inTurn<T>(dir: string, fn: () => Promise<T>): Promise<T> {
  const prior = fetching.get(dir) ?? Promise.resolve();
  const mine = prior.catch(() => {}).then(fn);
  fetching.set(dir, mine);
  try {
    return await mine;
  } finally {
    if (fetching.get(dir) === mine) fetching.delete(dir);
  }
}

/**
 * Fetches `branches` of the repository at `url` (normalised `key`) into its mirror, made on first
 * use; when the fetch fails, git's answer (sanitized, and logged), and the pushes then count as
 * changing everything.
 */
export async function fetchMirror(
  app: AppContext,
  key: string,
  url: string,
  branches: string[],
  o: { timeoutMs?: number; access?: Record<string, string> } = {},
): Promise<{ mirror: Mirror } | { error: string }> {
  const dir = join(mirrorsRoot(app), dirName(key));
  const failure = await inTurn(dir, () => fetchInto(app, dir, url, branches, o.timeoutMs ?? 300_000, o.access ?? {}));
  return failure === undefined ? { mirror: mirrorAt(dir) } : { error: failure };
}

/** Fetches into the mirror in `dir`; undefined when it worked, else git's answer (sanitized). */
async function fetchInto(
  app: AppContext,
  dir: string,
  url: string,
  branches: string[],
  timeoutMs: number,
  access: Record<string, string>,
): Promise<string | undefined> {
  try {
    if (!existsSync(join(dir, 'HEAD'))) {
      await mkdir(dir, { recursive: true });
      await git(dir, ['init', '-q', '--bare']);
    }
    // The address is given on each fetch (no remote kept): services may name the repository in another form.
    const specs = branches.map((b) => `+refs/heads/${b}:refs/heads/${b}`);
    // A private repository's token reaches git through its environment (credentials.ts), never the command line.
    await git(dir, ['fetch', '-q', '--no-tags', '--no-write-fetch-head', '--', url, ...specs], timeoutMs, access);
    return undefined;
  } catch (e) {
    const failure = gitFailure(e, access);
    app.log.warn({ repo: url, err: failure }, 'git mirror: cannot fetch the repository; its pushes count as changing every file');
    return failure;
  }
}

function mirrorAt(dir: string): Mirror {
  return {
    async changed(old, next) {
      if (!old) return null;
      try {
        // Exit status 1: not an ancestor (a force-push); an error: `old` is not in the mirror. Either way: everything.
        await git(dir, ['merge-base', '--is-ancestor', old, next]);
        return (await git(dir, ['diff', '--name-only', '--no-renames', '-z', old, next])).split('\0').filter(Boolean);
      } catch {
        return null;
      }
    },
    async describe(sha) {
      try {
        const [message, author] = (await git(dir, ['log', '-1', '--format=%B%x00%an', sha])).split('\0');
        return { message: message?.trim() || null, author: author?.trim() || null };
      } catch {
        return { message: null, author: null };
      }
    },
  };
}

/** Removes the mirrors of repositories nobody watches any more. */
export async function pruneMirrors(app: AppContext, watchedKeys: Iterable<string>): Promise<void> {
  const keep = new Set([...watchedKeys].map(dirName));
  const root = mirrorsRoot(app);
  const names = await readdir(root).catch(() => [] as string[]);
  for (const name of names) if (!keep.has(name)) await rm(join(root, name), { recursive: true, force: true });
}
