// Time-series charts (uPlot: small, fast, canvas-based) of a metric series `{time, value}[]`, with
// the y axis in the metric's unit: one scale for every tick, distinct labels, and an axis as wide
// as its longest label.
import { useEffect, useRef } from 'react';
import { useQuery } from '@tanstack/react-query';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import { api, call } from './api.js';
import { formatTicks, formatValue, type Unit } from './format.js';
import { Loaded } from './ui.js';

export interface Point {
  time: string;
  value: number;
}

const HEIGHT = 180;
// Approximate width of one character of the axis font (uPlot draws 12px system-ui).
const CHAR_PX = 8;

export function Chart({ title, points, unit = 'count' }: { title: string; points: Point[]; unit?: Unit }) {
  const el = useRef<HTMLDivElement>(null);
  useEffect(() => {
    const node = el.current;
    if (!node || !points.length) return;
    const xs = points.map((p) => Date.parse(p.time) / 1000);
    const ys = points.map((p) => p.value);
    const width = () => Math.max(240, node.clientWidth);
    const plot = new uPlot(
      {
        width: width(),
        height: HEIGHT,
        legend: { show: false },
        series: [{}, { label: title, stroke: '#3b82f6', fill: 'rgba(59,130,246,0.12)', width: 2 }],
        axes: [
          {},
          {
            values: (_u, ticks) => formatTicks(ticks, unit),
            size: (_u, labels) => 24 + CHAR_PX * Math.max(4, ...(labels ?? []).map((l) => String(l).length)),
          },
        ],
      },
      [xs, ys],
      node,
    );
    const ro = new ResizeObserver(() => plot.setSize({ width: width(), height: HEIGHT }));
    ro.observe(node);
    return () => {
      ro.disconnect();
      plot.destroy();
    };
  }, [points, title, unit]);
  const last = points.at(-1);
  return (
    <figure className="chart" data-chart={title}>
      <figcaption>
        {title}
        {last ? <span className="muted"> now {formatValue(last.value, unit)}</span> : null}
      </figcaption>
      {points.length ? <div ref={el} role="img" aria-label={`${title} over time`} /> : <p className="empty">No data in this window.</p>}
    </figure>
  );
}

/** A metrics window: the last hour until now. */
export function metricWindow() {
  const to = new Date();
  return { from: new Date(to.getTime() - 60 * 60_000).toISOString(), to: to.toISOString() };
}

/** A chart of one metrics operation of the API (`/databases/{id}/metrics/memory-usage`). */
export function MetricChart({ path, title, unit, range }: { path: string; title: string; unit?: Unit; range: { from: string; to: string } }) {
  const q = useQuery({
    queryKey: ['metric', path, range],
    // One point a minute; database metrics require the interval, application metrics accept it.
    queryFn: () => call<any>((api.GET as any)(path, { params: { query: { ...range, interval_in_seconds: 60 } } })),
    staleTime: 60_000,
  });
  return (
    <Loaded q={q} label={title}>
      {(d) => {
        const points = (Array.isArray(d) ? d : (d?.data ?? [])).filter((p: any) => typeof p?.value === 'number' && p.time);
        return <Chart title={title} points={points} unit={unit} />;
      }}
    </Loaded>
  );
}

/** The charts of a service's metrics, side by side. */
export function MetricCharts({ base, metrics }: { base: string; metrics: readonly { metric: string; title: string; unit: Unit }[] }) {
  const range = useRef(metricWindow()).current;
  return (
    <div className="charts">
      {metrics.map((m) => (
        <MetricChart key={m.metric} path={`${base}/metrics/${m.metric}`} title={m.title} unit={m.unit} range={range} />
      ))}
    </div>
  );
}
