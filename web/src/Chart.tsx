// A time-series chart (uPlot: small, fast, canvas-based) of a metric series `{time, value}[]`.
import { useEffect, useRef } from 'react';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';

export interface Point {
  time: string;
  value: number;
}

export function Chart({ title, points, unit }: { title: string; points: Point[]; unit?: string }) {
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
        height: 180,
        legend: { show: false },
        series: [{}, { label: title, stroke: '#3b82f6', fill: 'rgba(59,130,246,0.12)', width: 2 }],
        axes: [{}, { values: (_u, v) => v.map((x) => `${+x.toFixed(2)}${unit ?? ''}`), size: 60 }],
      },
      [xs, ys],
      node,
    );
    const ro = new ResizeObserver(() => plot.setSize({ width: width(), height: 180 }));
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
        {last ? (
          <span className="muted">
            {' '}
            now {+last.value.toFixed(2)}
            {unit ?? ''}
          </span>
        ) : null}
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
