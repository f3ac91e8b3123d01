// Polling, for repositories whose provider sends no webhook (a self-hosted server, a `file://`
// repository): one durable job ('git.poll', a single chain however many servers run) lists the
// heads of every watched repository with `git ls-remote` every SLIPWAY_GIT_POLL_SECONDS, once per
// repository however many services and companies watch it. When a followed head moved, it fetches
// the moved branches into the repository's mirror (mirror.ts; one fetch per repository), reads the
// files changed since the head it knew (a new branch or a force-push: all of them) and hands the
// push to the same path as a pushed webhook (push.ts), so static sites' deploy paths apply.
// Webhooks and polls record the heads they see in one table, so a push learnt both ways deploys
// once. The first look at a repository only records its heads. A company that set an access token
// for a repository (credentials.ts) polls it on its own, with its token and its own mirror: what a
// private repository holds reaches only the companies that can read it.
// A poll that cannot list or fetch a repository (unreachable, authentication refused) is told in
// the deliveries of the services watching it, once per change of state: one `error` delivery at
// the first failure (git's answer, with no credential in it), one `recovered` when it works again,
// nothing in between (git_poll_failures keeps the state per company and repository).
import { execFile } from 'node:child_process';
import { tmpdir } from 'node:os';
import { promisify } from 'node:util';
import { intSetting } from '../../shared/config.js';
import type { AppContext } from '../../shared/context.js';
import type { Tx } from '../../shared/db/index.js';
import { lockFor } from '../../shared/db/locks.js';
import { newId } from '../../shared/ids.js';
import { enqueue, pendingSubjects, type JobKind } from '../../shared/jobs.js';
import { autoDeployAppRows } from '../applications/index.js';
import { autoDeploySiteRows } from '../static-sites/index.js';
import { UNKNOWN } from './changes.js';
import { accessEnv, mirrorKey } from './credentials.js';
import { fetchMirror, gitEnv, gitFailure, pruneMirrors, withoutUserInfo } from './mirror.js';
import { normalizeRepo } from './repo.js';
import { receive } from './service.js';
import {
  advanceHead,
  claimDelivery,
  clearPollFailure,
  credentialsOfRepos,
  forgetPollFailure,
  headsOf,
  markPollFailure,
  pollFailures,
  trimDeliveries,
} from './storage.js';

export const POLL_JOB = 'git.poll';
const SUBJECT = 'git-poll';

declare module '../../shared/jobs.js' {
  interface JobMap {
    /** Lists the heads of the watched repositories and deploys the changed ones; then again one interval later. */
    'git.poll': Record<string, never>;
  }
}

/**
 * Seconds between polls (SLIPWAY_GIT_POLL_SECONDS; 0: no polling). The default is 60 on the real
 * runtimes and 0 on the simulated one, whose repositories are names only.
 */
export const pollSeconds = (app: AppContext): number => intSetting(app.config.apps.env, 'SLIPWAY_GIT_POLL_SECONDS', app.config.realRuntime ? 60 : 0, 0);

const run = promisify(execFile);

/** The branch heads of a repository, or git's answer (sanitized) when it cannot be listed (logged). */
async function lsRemote(app: AppContext, url: string, access: Record<string, string>): Promise<Map<string, string> | { error: string }> {
  try {
    // `--`: the address is never an option; cwd: not the repository the server may be run from.
    const { stdout } = await run('git', ['ls-remote', '--heads', '--', url], {
      cwd: tmpdir(),
      timeout: 30_000,
      maxBuffer: 16 * 1024 * 1024,
      env: { ...gitEnv(), ...access },
    });
    const heads = new Map<string, string>();
    for (const line of stdout.split('\n')) {
      const [sha, ref] = line.split('\t');
      if (sha && ref?.startsWith('refs/heads/')) heads.set(ref.slice('refs/heads/'.length), sha);
    }
    return heads;
  } catch (e) {
    const error = gitFailure(e, access);
    app.log.warn({ repo: url, err: error }, 'git poll: cannot list the repository heads');
    return { error };
  }
}

interface Watch {
  /** The normalised repository. */
  repo: string;
  /** An address to list it by (one of its services'). */
  url: string;
  /** Git's access (the token of the one company of this watch), {} for the companies without one. */
  access: Record<string, string>;
  /** Per company: the branches it follows, whether any branch counts (a static site with previews), and its services watching. */
  companies: Map<string, { branches: Set<string>; anyBranch: boolean; services: Service[] }>;
}

interface Service {
  service_type: 'app' | 'static-site';
  service_id: string;
}

/**
 * The watched repositories, by mirror key (credentials.ts `mirrorKey`): one watch per repository for
 * the companies without a token for it, and one per company that has one.
 */
async function watched(app: AppContext): Promise<Map<string, Watch>> {
  const db = app.database.db;
  const [apps, sites] = [await autoDeployAppRows(db), await autoDeploySiteRows(db)];
  const repoKeys = [...new Set([...apps, ...sites].map((x) => normalizeRepo(x.repo_url)).filter((x): x is string => !!x))];
  const tokens = new Map((await credentialsOfRepos(db, repoKeys)).map((c) => [`${c.company_id} ${c.repo}`, c]));
  const repos = new Map<string, Watch>();
  const add = (url: string | null, companyId: string, branch: string, anyBranch: boolean, service: Service) => {
    const repo = normalizeRepo(url);
    if (!repo || !url) return;
    const token = tokens.get(`${companyId} ${repo}`);
    const key = mirrorKey(repo, token && companyId);
    const w = repos.get(key) ?? { repo, url, access: token ? accessEnv(url, token, app.secrets.decrypt(token.token)) : {}, companies: new Map() };
    const c = w.companies.get(companyId) ?? { branches: new Set<string>(), anyBranch: false, services: [] };
    c.branches.add(branch);
    c.services.push(service);
    c.anyBranch ||= anyBranch;
    w.companies.set(companyId, c);
    repos.set(key, w);
  };
  for (const a of apps) add(a.repo_url, a.company_id, a.default_branch ?? 'main', false, { service_type: 'app', service_id: a.id });
  for (const s of sites) add(s.repo_url, s.company_id, s.default_branch, s.is_preview_enabled === 1, { service_type: 'static-site', service_id: s.id });
  return repos;
}

/** One poll of every watched repository. */
export async function pollOnce(app: AppContext): Promise<void> {
  const db = app.database.db;
  const repos = await watched(app);
  const failures = await pollFailures(db);
  // `${company} ${repo}` of the repositories whose poll failed last time (the only ones that can recover).
  const failing = new Set(failures.map((f) => `${f.company_id} ${f.repo}`));
  for (const [key, w] of repos) {
    const heads = await lsRemote(app, w.url, w.access);
    if (!(heads instanceof Map)) {
      await failed(app, w, 'ls-remote', heads.error, failing);
      continue;
    }
    await worked(app, w, 'ls-remote', failing);
    const seen = await headsOf(db, w.repo);
    // Per company, the followed branches whose head moved since it last looked (with the head it knew).
    const moved: { companyId: string; branch: string; sha: string; old: string | undefined }[] = [];
    for (const [companyId, c] of w.companies) {
      const known = new Map(seen.filter((h) => h.company_id === companyId).map((h) => [h.branch, h.sha]));
      for (const [branch, sha] of heads) {
        if (!c.anyBranch && !c.branches.has(branch)) continue;
        if (known.get(branch) === sha) continue;
        // The first look at the repository for this company records where it is, and deploys nothing.
        if (!known.size) await advanceHead(db, companyId, w.repo, branch, sha);
        else moved.push({ companyId, branch, sha, old: known.get(branch) });
      }
    }
    if (!moved.length) continue;
    const fetched = await fetchMirror(app, key, w.url, [...new Set(moved.map((m) => m.branch))], { access: w.access });
    if ('error' in fetched) await failed(app, w, 'fetch', fetched.error, failing);
    else await worked(app, w, 'fetch', failing);
    const mirror = 'mirror' in fetched ? fetched.mirror : undefined;
    for (const m of moved) {
      const about = (await mirror?.describe(m.sha)) ?? { message: null, author: null };
      const changed = (await mirror?.changed(m.old, m.sha)) ?? null;
      const unknownChanges = changed ? undefined : !mirror ? UNKNOWN.fetchFailed : !m.old ? UNKNOWN.newBranch : UNKNOWN.forcePush;
      await receive(app, m.companyId, {
        provider: 'poll',
        event: 'push',
        deliveryId: `poll:${newId()}`,
        events: [{ kind: 'push', repos: [w.url], branch: m.branch, commit: { sha: m.sha, ...about }, before: m.old ?? null, changed, unknownChanges }],
      });
    }
  }
  await pruneMirrors(app, repos.keys());
  // A repository a company no longer watches forgets its failure (watched again, a failure is told again).
  const watching = new Set([...repos.values()].flatMap((w) => [...w.companies.keys()].map((c) => `${c} ${w.repo}`)));
  for (const f of failures) if (!watching.has(`${f.company_id} ${f.repo}`)) await forgetPollFailure(db, f.company_id, f.repo);
}

/** Records a poll delivery `result` for one company of a watch, naming each of its services watching the repository. */
async function record(companyId: string, services: Service[], stage: string, result: 'error' | 'recovered', message: string, tx: Tx) {
  const action = result === 'error' ? 'pollFailed' : 'pollRecovered';
  const triggered = services.map((x) => ({ ...x, action, deployment_id: null, detail: message }));
  await claimDelivery(tx, {
    id: newId(),
    company_id: companyId,
    provider: 'poll',
    event: stage,
    delivery_id: `poll-${result}:${newId()}`,
    result,
    message,
    triggered: JSON.stringify(triggered),
    service_ids: services.map((x) => x.service_id).join(' '),
    created_at: new Date().toISOString(),
  });
  await trimDeliveries(tx, companyId);
}

/** Polling the watch's repository failed at `stage`: an `error` delivery for each company to which this is new. */
async function failed(app: AppContext, w: Watch, stage: 'ls-remote' | 'fetch', error: string, failing: Set<string>): Promise<void> {
  const what = stage === 'ls-remote' ? 'list the branches of' : 'fetch';
  const message = `Polling cannot ${what} ${withoutUserInfo(w.url)}: ${error}`;
  for (const [companyId, c] of w.companies) {
    if (failing.has(`${companyId} ${w.repo}`)) continue;
    await app.database.db.transaction().execute(async (tx) => {
      if (await markPollFailure(tx, { company_id: companyId, repo: w.repo, stage, message: error, since: new Date().toISOString() }))
        await record(companyId, c.services, stage, 'error', message, tx);
    });
    failing.add(`${companyId} ${w.repo}`);
  }
}

/** `stage` worked for the watch's repository: a `recovered` delivery for each company whose poll had failed. */
async function worked(app: AppContext, w: Watch, stage: 'ls-remote' | 'fetch', failing: Set<string>): Promise<void> {
  for (const [companyId, c] of w.companies) {
    const key = `${companyId} ${w.repo}`;
    if (!failing.has(key)) continue;
    const cleared = await app.database.db.transaction().execute(async (tx) => {
      const was = await clearPollFailure(tx, companyId, w.repo, stage);
      if (was) await record(companyId, c.services, stage, 'recovered', `Polling reaches ${withoutUserInfo(w.url)} again (failing since ${was.since})`, tx);
      return !!was;
    });
    if (cleared) failing.delete(key);
  }
}

export function pollJob(app: AppContext): JobKind<typeof POLL_JOB> {
  return {
    transactional: false,
    io: true,
    async run() {
      const seconds = pollSeconds(app);
      if (!seconds) return;
      await pollOnce(app);
      return { rescheduleAt: new Date(Date.now() + seconds * 1000) };
    },
  };
}

/** At start: arms the poll chain unless one is queued (idempotent, safe on several servers). */
export async function armPoll(app: AppContext): Promise<void> {
  if (!pollSeconds(app)) return;
  await app.database.db.transaction().execute(async (tx) => {
    await lockFor(tx, SUBJECT);
    if ((await pendingSubjects(tx, POLL_JOB, SUBJECT)).size) return;
    await enqueue(tx, { kind: POLL_JOB, payload: {}, subjectId: SUBJECT, maxAttempts: 1000 });
  });
  app.jobs.wake();
}
