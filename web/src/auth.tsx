// Who the signed-in key is and what it may do: GET /api-keys/me (its roles and scoped
// capabilities) joined with GET /resources/rbac/api-key-roles (each role's permissions).
// Write controls render only when `can` says so; the API still decides (a 403 is shown as is).
import { createContext, useContext, type ReactNode } from 'react';
import { useQuery } from '@tanstack/react-query';
import { api, call } from './api.js';

export interface Access {
  name: string;
  companyId?: string;
  roles: string[];
  /** Whether the key holds `permission` (`APP:UPDATE`), for `id` when the capability is scoped. */
  can(permission: string, id?: string): boolean;
  /** Whether the key holds `permission` company-wide or for at least one resource. */
  canAny(permission: string): boolean;
}

const Ctx = createContext<Access | null>(null);

export function useAccess(): Access {
  const a = useContext(Ctx);
  if (!a) throw new Error('useAccess outside AccessProvider');
  return a;
}

export function useCan(permission: string, id?: string) {
  return useAccess().can(permission, id);
}

export function useMe() {
  return useQuery({ queryKey: ['me'], queryFn: () => call(api.GET('/api-keys/me')), staleTime: 60_000, retry: false });
}

export function AccessProvider({ children, fallback }: { children: ReactNode; fallback: (error: unknown) => ReactNode }) {
  const me = useMe();
  const roles = useQuery({ queryKey: ['rbac-roles'], queryFn: () => call(api.GET('/resources/rbac/api-key-roles')), staleTime: Infinity });
  if (me.isError) return <>{fallback(me.error)}</>;
  if (me.isPending || roles.isPending) return <p className="loading">Signing in…</p>;
  const roleList = (roles.data ?? []) as { id: string; name: string; permissions?: { name?: string }[] | string[] }[];
  const byId = new Map(roleList.map((r) => [r.id, r]));
  const granted = new Set<string>();
  const scoped = new Map<string, Set<string>>();
  const keyRoles = (me.data.roles ?? []) as { id?: string; name?: string }[];
  for (const r of keyRoles) {
    for (const p of byId.get(String(r.id))?.permissions ?? []) granted.add(typeof p === 'string' ? p : String(p.name));
  }
  for (const c of me.data.capabilities ?? []) {
    if (!c.permission) continue;
    if (c.id_resource) {
      const set = scoped.get(c.permission) ?? new Set<string>();
      set.add(c.id_resource);
      scoped.set(c.permission, set);
    } else granted.add(c.permission);
  }
  const access: Access = {
    name: me.data.name,
    companyId: me.data.company_id,
    roles: keyRoles.map((r) => String(r.name ?? r.id)),
    can: (p, id) => granted.has(p) || (id !== undefined && (scoped.get(p)?.has(id) ?? false)),
    canAny: (p) => granted.has(p) || scoped.has(p),
  };
  return <Ctx.Provider value={access}>{children}</Ctx.Provider>;
}
