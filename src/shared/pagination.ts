// Offset pagination with a stable order (created_at, id) served by an index on
// (company_id, created_at, id).
import type { SelectQueryBuilder } from 'kysely';

export interface Page {
  limit: number;
  offset: number;
}

export function pageOf(q: { limit?: number; offset?: number } | undefined): Page {
  return { limit: q?.limit ?? 25, offset: q?.offset ?? 0 };
}

export interface PageResult<T> {
  data: T[];
  total: number;
  offset: number;
  limit: number;
}

/** Runs `base` twice: once counted, once ordered and sliced. */
export async function paginate<DB, TB extends keyof DB, O>(
  base: SelectQueryBuilder<DB, TB, O>,
  page: Page,
  order: { column: string; id: string; direction?: 'asc' | 'desc' } = { column: 'created_at', id: 'id' },
): Promise<PageResult<O>> {
  const countRow = await (base as any)
    .clearSelect()
    .select((eb: any) => eb.fn.countAll().as('n'))
    .executeTakeFirst();
  const total = Number(countRow?.n ?? 0);
  const data = await (base as any)
    .orderBy(order.column, order.direction ?? 'asc')
    .orderBy(order.id, order.direction ?? 'asc')
    .limit(page.limit)
    .offset(page.offset)
    .execute();
  return { data, total: Math.min(total, 10000), offset: page.offset, limit: page.limit };
}
