// The git webhook deliveries (and polled pushes) that concerned one service: what each push or
// pull request did, or why it did nothing (docs/deploy-on-push.md). Shown on the application and
// static site pages to readers with WEBHOOK:READ.
import { useQuery } from '@tanstack/react-query';
import { api, call } from './api.js';
import { useCan } from './auth.js';
import { Badge, Rows, Section, When } from './ui.js';

export function GitDeliveries({ serviceId }: { serviceId: string }) {
  const can = useCan('WEBHOOK:READ');
  const list = useQuery({
    queryKey: ['git-deliveries', serviceId],
    queryFn: () => call(api.GET('/git/deliveries', { params: { query: { service_id: serviceId, limit: 10 } } })),
    refetchInterval: 15_000,
    enabled: can,
  });
  if (!can) return null;
  return (
    <Section title="Deploy on push" id="git-deliveries">
      <Rows
        q={list}
        label="git deliveries"
        empty="No push or pull request has concerned this service yet (see docs/deploy-on-push.md to connect a repository)."
      >
        {(d) => (
          <li key={d.id}>
            <Badge status={d.result} /> <strong>{d.provider}</strong> {d.event} <When iso={d.created_at} />
            <div className="muted small">
              {d.triggered
                .filter((t) => t.service_id === serviceId)
                .map((t) => `${t.action}${t.deployment_id ? ` (deployment ${t.deployment_id.slice(0, 8)})` : ''}${t.detail ? `: ${t.detail}` : ''}`)
                .join('; ') || d.message}
            </div>
          </li>
        )}
      </Rows>
    </Section>
  );
}
