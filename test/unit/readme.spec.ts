/**
 * The README is the front door: the two commands first, a diagram of an order's path, and at most 150 lines
 * (everything else lives in docs/, see docs/README.md).
 */
import { readdir, readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { docPath } from '../../scripts/lib/docs-tables.js';

const readme = await readFile(docPath('README.md'), 'utf8');
const pkg = JSON.parse(await readFile(docPath('package.json'), 'utf8')) as { scripts: Record<string, string> };

describe('README', () => {
  it('has at most 150 lines', () => {
    expect(readme.trimEnd().split('\n').length).toBeLessThanOrEqual(150);
  });

  it('opens with the two commands, and both exist', () => {
    const opening = readme.split('\n').slice(0, 6).join('\n');
    expect(opening).toMatch(/^# .+\n\n```bash\nnpm install && npm start +# .+\nnpm test +# .+\n```$/);
    expect(pkg.scripts.start).toBeDefined();
    expect(pkg.scripts.test).toBeDefined();
  });

  it("draws an order's path in a mermaid block, with the pivot and the operator's retry", () => {
    const diagram = /```mermaid\n([\s\S]*?)\n```/.exec(readme)?.[1];
    expect(diagram).toBeDefined();
    expect(diagram).toMatch(/^flowchart (LR|TD)/);
    for (const text of ['THE PIVOT', 'halt fence', 'attention_required', 'POST /orders/:id/retry']) {
      expect(diagram).toContain(text);
    }
  });

  it('links to every document of docs/', async () => {
    const docs = (await readdir(docPath('docs'))).filter((f) => f.endsWith('.md'));
    for (const doc of docs) expect(readme).toContain(`](docs/${doc})`);
  });
});
