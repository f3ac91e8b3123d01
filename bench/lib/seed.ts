// Rows written straight into the server's database: the API would take minutes to create 100,000.
import { openDatabase } from '../../src/shared/db/index.js';
import { type Slipway } from './bench.js';

/** `apps` copies of application `templateAppId` (its company's), and `projects` projects of another company. */
export async function seedRows(s: Slipway, templateAppId: string, apps: number, projects: number) {
  const database = openDatabase({ databaseUrl: s.databaseUrl, dataDir: s.dir });
  const db = database.db as any;
  try {
    const template = await db.selectFrom('applications').selectAll().where('id', '=', templateAppId).executeTakeFirstOrThrow();
    const t0 = Date.parse(template.created_at);
    const id = (prefix: string, i: number) => `${prefix}-0000-4000-8000-${String(i).padStart(12, '0')}`;
    for (let i = 0; i < apps; i += 300) {
      const rows = Array.from({ length: Math.min(300, apps - i) }, (_, j) => {
        const k = i + j;
        const at = new Date(t0 - (apps - k) * 1000).toISOString();
        return {
          ...template,
          id: id('a0000000', k),
          name: `seeded-${k}`,
          display_name: `Seeded ${k}`,
          hook_token: template.hook_token ? `seeded-${k}` : null,
          created_at: at,
          updated_at: at,
        };
      });
      await db.insertInto('applications').values(rows).execute();
    }
    const other = id('c0000000', 1);
    const now = new Date().toISOString();
    await db.insertInto('companies').values({ id: other, name: 'Seeded company', status: 'active', created_at: now, updated_at: now }).execute();
    for (let i = 0; i < projects; i += 1000) {
      const rows = Array.from({ length: Math.min(1000, projects - i) }, (_, j) => ({
        id: id('p0000000', i + j),
        company_id: other,
        name: `seeded-${i + j}`,
        display_name: `Seeded ${i + j}`,
        created_at: now,
        updated_at: now,
      }));
      await db.insertInto('projects').values(rows).execute();
    }
  } finally {
    await database.close();
  }
}
