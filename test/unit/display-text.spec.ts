/**
 * Text people read, made safe (workflows/display-text.ts; issue 21, findings 1 and 2): invisible and directional
 * characters never survive into what an operator or a customer reads, a right-to-left name is isolated, Markdown is
 * escaped for the Temporal UI's renderer, and the page (src/web/public/app.js) removes the same characters.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { buildPlan } from '../../activities/catalogue/plan.js';
import { STEPS } from '../../activities/index.js';
import { FSI, INVISIBLE, PDI, displayText, escapeMarkdown, plainLine } from '../../workflows/display-text.js';

/** The bidirectional controls the issue names, and the marks. */
const BIDI = [
  '\u202a',
  '\u202b',
  '\u202c',
  '\u202d',
  '\u202e',
  '\u2066',
  '\u2067',
  '\u2068',
  '\u2069',
  '\u200e',
  '\u200f',
  '\u061c',
];
/** Other invisible format characters: zero-width space, word joiner, BOM, soft hyphen, a tag, an annotation. */
const HIDDEN = ['\u200b', '\u2060', '\ufeff', '\u00ad', '\u{e0041}', '\ufff9', '\u180e'];

describe('displayText: text a customer controls, inside a line of ours', () => {
  it.each([...BIDI, ...HIDDEN].map((c) => [c.codePointAt(0)!.toString(16), c]))(
    'removes U+%s wherever it stands',
    (_hex, c) => {
      expect(displayText(`${c}Ada${c} Love${c}lace${c}`)).toBe('Ada Lovelace');
    },
  );

  it("leaves the issue's spoof as the characters it is made of, in their order", () => {
    expect(displayText('Ada \u202eRUE 00.1 · senil 1')).toBe('Ada RUE 00.1 · senil 1');
  });

  it('keeps the joiners scripts and emoji need', () => {
    expect(displayText('می\u200cخواهم')).toBe(`${FSI}می\u200cخواهم${PDI}`);
    expect(displayText('👩\u200d💻 Grace')).toBe('👩\u200d💻 Grace');
  });

  it('isolates a right-to-left name, and only such a name', () => {
    expect(displayText('שרה כהן')).toBe(`${FSI}שרה כהן${PDI}`);
    expect(displayText('Ali عليّ')).toBe(`${FSI}Ali عليّ${PDI}`);
    expect(displayText('Ada Lovelace')).toBe('Ada Lovelace');
    expect(displayText('Zoë Ørsted-Łukasz 李')).toBe('Zoë Ørsted-Łukasz 李');
  });

  it('makes one line of controls and line breaks, and cuts to a length in code points', () => {
    expect(displayText(' Ada\r\n\tLove\u0007lace\u2028 ')).toBe('Ada Love lace');
    expect(displayText('😀'.repeat(10), 4)).toBe('😀😀😀…');
    expect(displayText('שרה'.repeat(10), 4)).toBe(`${FSI}שרה…${PDI}`);
  });
});

describe('plainLine: a whole line of ours', () => {
  it('keeps the isolates displayText adds, drops every other control and any unpaired isolate', () => {
    const name = displayText('שרה');
    expect(plainLine(`Order 1 · ${name} · 2 lines`)).toBe(`Order 1 · ${name} · 2 lines`);
    expect(plainLine(`a ${FSI}b`)).toBe('a b');
    expect(plainLine(`a${PDI} ${FSI}b${PDI}`)).toBe(`a ${FSI}b${PDI}`);
    expect(plainLine('a\u202eb\u2066c\u200bd')).toBe('abcd');
  });

  it('is what a plan gives each step as its summary (at most 200 characters, no unpaired isolate)', () => {
    const plan = buildPlan(STEPS, {
      orderId: '1a2b3c4d-0000-4000-8000-000000000042',
      customerEmail: '\u202eada@example.com',
      customerName: 'Ada',
      currency: 'EUR',
      totalMinor: 100,
      lines: [{ sku: 'A', quantity: 1 }],
    });
    for (const step of plan.steps) {
      expect(step.summary).toBe(plainLine(step.summary));
      expect(step.summary).not.toMatch(INVISIBLE);
    }
  });
});

describe('escapeMarkdown', () => {
  it('escapes every character of gomarkdown’s escape set, and a slash between digits as an entity', () => {
    expect(escapeMarkdown('a_b`c|d~e{f}g&h\\i')).toBe('a\\_b\\`c\\|d\\~e\\{f\\}g\\&h\\\\i');
    expect(escapeMarkdown('http://x.example 1/2 1⁄2 a/b $x$ ^s^ -- ...')).toBe(
      'http\\://x\\.example 1&#47;2 1&#8260;2 a/b \\$x\\$ \\^s\\^ \\-\\- \\.\\.\\.',
    );
  });

  it('leaves nothing invisible and keeps one line', () => {
    const out = escapeMarkdown('Ada \u202eRUE\n# heading');
    expect(out).toBe('Ada RUE \\# heading');
  });
});

describe('the page removes the same characters', () => {
  it("app.js's INVISIBLE is display-text's", () => {
    const page = readFileSync(new URL('../../src/web/public/app.js', import.meta.url), 'utf8');
    const literal = /const INVISIBLE =\s*\/(.+)\/gu;/.exec(page);
    expect(literal, 'const INVISIBLE = /…/gu; in app.js').not.toBeNull();
    expect(literal![1]).toBe(INVISIBLE.source);
  });
});
