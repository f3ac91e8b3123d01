// The operator surface, outside /v3: manage companies, users and keys, company states, device
// codes and a full reset. Enabled only when an operator token is configured; every request must
// carry it as a bearer token. The same actions exist as `slipway admin ...` commands.
import type { FastifyInstance } from 'fastify';
import type { AppContext } from '../../shared/context.js';
import { ApiError, badRequest } from '../../shared/errors.js';
import { requireBearer } from '../../shared/auth/tokens.js';
import { observability, type JournalQuery } from '../../shared/observability/index.js';
import * as accounts from '../accounts/index.js';
import * as devices from '../device-codes/index.js';
import { resetTables } from '../index.js';
import { validateProgression } from '../../shared/runtime/simulation.js';
import { registerSnapshots } from './snapshots.js';

type Body = Record<string, unknown> | undefined;
const str = (b: Body, k: string, required = false): string | undefined => {
  const v = b?.[k];
  if (v === undefined || v === null) {
    if (required) throw badRequest(`${k} is required`);
    return undefined;
  }
  if (typeof v !== 'string') throw badRequest(`${k} must be a string`);
  return v;
};

export function registerAdmin(fastify: FastifyInstance, app: AppContext): void {
  const token = app.config.operatorToken;
  fastify.register(
    async (r) => {
      r.addHook('onRequest', async (req) =>
        requireBearer(req.headers.authorization, [token], 'The operator surface is disabled: start the server with SLIPWAY_OPERATOR_TOKEN set'),
      );
      const db = app.database.db;
      const tx = async <T>(fn: (t: typeof db) => Promise<T>) => {
        const result = await db.transaction().execute((t) => fn(t as unknown as typeof db));
        await app.keys.announced();
        return result;
      };

      r.get('/companies', async () => ({ data: await accounts.listCompanies(db) }));
      r.post('/companies', async (req, reply) => {
        const b = req.body as Body;
        const result = await tx((t) => accounts.createCompanyWithKey(app, t, str(b, 'name', true)!, str(b, 'admin_key_role'), str(b, 'key_name')));
        return reply.status(201).send(result);
      });
      r.get('/companies/:id', async (req) => accounts.findCompany(db, (req.params as { id: string }).id));
      r.post('/companies/:id/users', async (req, reply) => {
        const b = req.body as Body;
        const user = await tx((t) =>
          accounts.createUser(t, (req.params as { id: string }).id, { email: str(b, 'email', true)!, full_name: str(b, 'full_name'), image: str(b, 'image') }),
        );
        return reply.status(201).send(user);
      });
      r.post('/companies/:id/api-keys', async (req, reply) => {
        const b = req.body as Body;
        const caps = b?.capabilities as { permission: string; id_resource?: string | null }[] | undefined;
        const key = await tx((t) =>
          accounts.createKeyWithRole(app, t, (req.params as { id: string }).id, {
            name: str(b, 'name') ?? 'operator key',
            role: str(b, 'role'),
            expired_at: str(b, 'expired_at'),
            capabilities: caps,
          }),
        );
        return reply.status(201).send({ id: key.id, name: key.name, token: key.token });
      });
      const setStatus = (status: accounts.CompanyStatus) => async (req: { params: unknown }) =>
        tx((t) => accounts.setCompanyStatus(app, t, (req.params as { id: string }).id, status));
      r.post('/companies/:id/suspend', setStatus('suspended'));
      r.post('/companies/:id/resume', setStatus('active'));
      r.post('/companies/:id/maintenance', setStatus('maintenance'));
      r.delete('/companies/:id/maintenance', setStatus('active'));
      r.post('/device-codes/:code/approve', async (req) => {
        const b = req.body as Body;
        return tx((t) =>
          devices.decide(app, t, (req.params as { code: string }).code, {
            approve: true,
            companyId: str(b, 'company_id', true),
            role: str(b, 'role'),
            name: str(b, 'name'),
          }),
        );
      });
      r.post('/device-codes/:code/deny', async (req) => tx((t) => devices.decide(app, t, (req.params as { code: string }).code, { approve: false })));
      // Simulation controls of the simulated runtime.
      r.get('/simulation', async () => ({ progression: await app.simulation.listProgression(), faults: await app.simulation.listFaults() }));
      r.put('/simulation/progression/:operation', async (req) => {
        const { operation } = req.params as { operation: string };
        const p = validateProgression(req.body);
        await app.simulation.setProgression(operation, p);
        return { operation, progression: p };
      });
      r.delete('/simulation/progression/:operation', async (req, reply) => {
        await app.simulation.clearProgression((req.params as { operation: string }).operation);
        return reply.status(204).send();
      });
      r.get('/simulation/faults', async () => ({ data: await app.simulation.listFaults() }));
      r.post('/simulation/faults', async (req, reply) => reply.status(201).send(await app.simulation.addFault((req.body ?? {}) as Record<string, never>)));
      r.delete('/simulation/faults/:id', async (req, reply) => {
        await app.simulation.removeFault((req.params as { id: string }).id);
        return reply.status(204).send();
      });
      // The request journal (SLIPWAY_JOURNAL=on): what clients sent, newest first.
      const journal = () => {
        const j = observability(app)?.journal;
        if (!j) throw new ApiError(404, 'The request journal is off: start the server with SLIPWAY_JOURNAL=on');
        return j;
      };
      r.get('/requests', async (req) => ({ data: await journal().query(req.query as JournalQuery) }));
      r.delete('/requests', async () => ({ deleted: await journal().clear() }));
      registerSnapshots(r, app);
      r.post('/reset', async () => {
        const boot = await accounts.resetAll(app, resetTables());
        return { message: 'All state was removed and the server bootstrapped again', company_id: boot.companyId, token: boot.token };
      });
    },
    { prefix: '/_admin' },
  );
}
