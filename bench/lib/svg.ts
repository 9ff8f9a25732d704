/**
 * The benchmark's plot, hand-written SVG (no dependency): left, completed units over time in the burst of each
 * arm; right, CPU ms per unit by process for each kind of arm (burst phase, mean over its arms).
 */

export interface Series {
  label: string;
  colour: string;
  /** Seconds since the first start/POST of the burst, one per completed unit. */
  closeOffsets: number[];
}

export interface CpuBar {
  label: string;
  /** process -> ms per unit, stacked in this order. */
  parts: Array<[string, number]>;
}

const PART_COLOURS: Record<string, string> = {
  server: '#6b4fbb',
  worker: '#2a9d8f',
  api: '#e76f51',
  postgres: '#264653',
  client: '#e9c46a',
};

const esc = (s: string): string => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

function niceStep(max: number, ticks = 5): number {
  const raw = max / ticks;
  const mag = 10 ** Math.floor(Math.log10(raw || 1));
  const n = raw / mag;
  return (n <= 1 ? 1 : n <= 2 ? 2 : n <= 5 ? 5 : 10) * mag;
}

export function renderPlot(opts: { title: string; series: Series[]; bars: CpuBar[] }): string {
  const W = 1100;
  const H = 440;
  const out: string[] = [];
  out.push(
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="sans-serif" font-size="12">`,
    `<rect width="${W}" height="${H}" fill="white"/>`,
    `<text x="${W / 2}" y="22" text-anchor="middle" font-size="15" font-weight="bold">${esc(opts.title)}</text>`,
  );

  // Left: cumulative completions.
  const L = { x: 60, y: 50, w: 560, h: 320 };
  const maxT = Math.max(1, ...opts.series.flatMap((s) => s.closeOffsets));
  const maxN = Math.max(1, ...opts.series.map((s) => s.closeOffsets.length));
  const sx = (t: number): number => L.x + (t / maxT) * L.w;
  const sy = (n: number): number => L.y + L.h - (n / maxN) * L.h;
  out.push(`<rect x="${L.x}" y="${L.y}" width="${L.w}" height="${L.h}" fill="none" stroke="#999"/>`);
  const tStep = niceStep(maxT);
  for (let t = 0; t <= maxT + 1e-9; t += tStep) {
    out.push(
      `<line x1="${sx(t)}" y1="${L.y + L.h}" x2="${sx(t)}" y2="${L.y + L.h + 4}" stroke="#999"/>`,
      `<text x="${sx(t)}" y="${L.y + L.h + 17}" text-anchor="middle">${+t.toFixed(1)}</text>`,
    );
  }
  const nStep = niceStep(maxN);
  for (let n = 0; n <= maxN + 1e-9; n += nStep) {
    out.push(
      `<line x1="${L.x - 4}" y1="${sy(n)}" x2="${L.x + L.w}" y2="${sy(n)}" stroke="#eee"/>`,
      `<text x="${L.x - 7}" y="${sy(n) + 4}" text-anchor="end">${n}</text>`,
    );
  }
  out.push(
    `<text x="${L.x + L.w / 2}" y="${L.y + L.h + 34}" text-anchor="middle">seconds since the first start / POST of the burst</text>`,
    `<text transform="translate(16 ${L.y + L.h / 2}) rotate(-90)" text-anchor="middle">units completed</text>`,
  );
  opts.series.forEach((s, i) => {
    const times = [...s.closeOffsets].sort((a, b) => a - b);
    // A step line: the count rises at each close time.
    const pts = [`${sx(0)},${sy(0)}`];
    times.forEach((t, k) =>
      pts.push(`${sx(t).toFixed(1)},${sy(k).toFixed(1)}`, `${sx(t).toFixed(1)},${sy(k + 1).toFixed(1)}`),
    );
    out.push(`<polyline fill="none" stroke="${s.colour}" stroke-width="1.6" points="${pts.join(' ')}"/>`);
    const ly = L.y + 14 + i * 16;
    out.push(
      `<line x1="${L.x + 10}" y1="${ly - 4}" x2="${L.x + 30}" y2="${ly - 4}" stroke="${s.colour}" stroke-width="2"/>`,
      `<text x="${L.x + 35}" y="${ly}">${esc(s.label)}</text>`,
    );
  });

  // Right: stacked CPU bars.
  const R = { x: 720, y: 50, w: 340, h: 320 };
  const totals = opts.bars.map((b) => b.parts.reduce((a, [, v]) => a + v, 0));
  const maxC = Math.max(1, ...totals);
  const cy = (v: number): number => R.y + R.h - (v / maxC) * R.h;
  out.push(`<rect x="${R.x}" y="${R.y}" width="${R.w}" height="${R.h}" fill="none" stroke="#999"/>`);
  const cStep = niceStep(maxC);
  for (let v = 0; v <= maxC + 1e-9; v += cStep) {
    out.push(
      `<line x1="${R.x - 4}" y1="${cy(v)}" x2="${R.x + R.w}" y2="${cy(v)}" stroke="#eee"/>`,
      `<text x="${R.x - 7}" y="${cy(v) + 4}" text-anchor="end">${v}</text>`,
    );
  }
  out.push(
    `<text transform="translate(${R.x - 42} ${R.y + R.h / 2}) rotate(-90)" text-anchor="middle">CPU ms per unit (burst)</text>`,
  );
  const bw = Math.min(70, R.w / (opts.bars.length * 1.6));
  opts.bars.forEach((b, i) => {
    const x = R.x + (R.w / opts.bars.length) * (i + 0.5) - bw / 2;
    let acc = 0;
    for (const [name, v] of b.parts) {
      if (!(v > 0)) continue;
      out.push(
        `<rect x="${x}" y="${cy(acc + v)}" width="${bw}" height="${cy(acc) - cy(acc + v)}" fill="${PART_COLOURS[name] ?? '#aaa'}"><title>${esc(`${b.label} ${name}: ${v.toFixed(1)} ms`)}</title></rect>`,
      );
      acc += v;
    }
    out.push(
      `<text x="${x + bw / 2}" y="${R.y + R.h + 17}" text-anchor="middle">${esc(b.label)}</text>`,
      `<text x="${x + bw / 2}" y="${cy(acc) - 5}" text-anchor="middle">${acc.toFixed(0)}</text>`,
    );
  });
  Object.entries(PART_COLOURS).forEach(([name, colour], i) => {
    const lx = R.x + i * 72;
    out.push(
      `<rect x="${lx}" y="${R.y + R.h + 28}" width="10" height="10" fill="${colour}"/>`,
      `<text x="${lx + 14}" y="${R.y + R.h + 37}">${name}</text>`,
    );
  });
  out.push('</svg>');
  return `${out.join('\n')}\n`;
}
