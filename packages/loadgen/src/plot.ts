import * as vega from 'vega';
import * as vl from 'vega-lite';

/** Charts as SVG, rendered headless with Vega-Lite (no browser needed). */
export type Row = Record<string, string | number>;

/** What every chart shares: size, background, title and data. */
function frame(title: string, rows: Row[]) {
  return {
    $schema: 'https://vega.github.io/schema/vega-lite/v6.json',
    title,
    width: 520,
    height: 300,
    background: 'white',
    data: { values: rows },
  };
}

async function render(spec: vl.TopLevelSpec): Promise<string> {
  const view = new vega.View(vega.parse(vl.compile(spec).spec), { renderer: 'none' });
  const svg = await view.toSVG();
  view.finalize();
  return svg;
}

export async function lineChartSvg(o: {
  title: string;
  rows: Row[];
  x: string;
  y: string;
  series?: string;
  xTitle?: string;
  yTitle?: string;
  logY?: boolean;
}): Promise<string> {
  return render({
    ...frame(o.title, o.rows),
    mark: { type: 'line', point: true },
    encoding: {
      x: { field: o.x, type: 'quantitative', title: o.xTitle ?? o.x },
      y: { field: o.y, type: 'quantitative', title: o.yTitle ?? o.y, ...(o.logY ? { scale: { type: 'log' } } : {}) },
      ...(o.series ? { color: { field: o.series, type: 'nominal', title: o.series } } : {}),
    },
  } as vl.TopLevelSpec);
}

export async function barChartSvg(o: {
  title: string;
  rows: Row[];
  x: string;
  y: string;
  yTitle?: string;
}): Promise<string> {
  return render({
    ...frame(o.title, o.rows),
    mark: 'bar',
    encoding: {
      x: { field: o.x, type: 'nominal', sort: null, axis: { labelAngle: -20 } },
      y: { field: o.y, type: 'quantitative', title: o.yTitle ?? o.y },
    },
  } as vl.TopLevelSpec);
}
