/**
 * Text that people read (the Temporal UI's user metadata and its workflow list, the confirmation email, the page),
 * made safe where it comes from outside: a customer's name, a cancel reason, a provider's message. Sandbox-safe: plain
 * functions, no imports; the API, the activities and the workflow share them.
 *
 * **Invisible and directional characters** are neutralised on output, wherever text is shown, not refused or changed
 * at the API: the API keeps what the customer sent (orders stored before this rule, provider messages and operators'
 * text reach the same screens, and only output handling covers them all), and refusing would fail real orders over
 * characters nobody can see (an input method may put a mark into a right-to-left name). On output:
 * - the invisible format characters of {@link INVISIBLE} are removed: the bidirectional controls (embeddings,
 *   overrides and isolates, U+202A–U+202E, U+2066–U+2069, and the marks U+200E, U+200F, U+061C), which reorder the
 *   text around them (`Ada \u202eRUE 00.1 · senil 1` made a 43.50 EUR order read "… · 1 lines · 1.00 EUR"), and the
 *   other format characters that render as nothing and can hide text (zero-width space, word joiner, soft hyphen,
 *   byte order mark, tag characters, …); the joiners U+200C and U+200D stay (Persian, Indic scripts and emoji need
 *   them), and so do visible format characters (the Arabic number signs);
 * - control characters and line breaks become spaces: one line;
 * - text a customer controls that holds a right-to-left letter (Hebrew, Arabic, …; the only characters left that can
 *   still move their neighbours) is isolated with U+2068 FIRST STRONG ISOLATE … U+2069 POP DIRECTIONAL ISOLATE
 *   (Unicode UAX #9, the W3C's advice for text inserted into a sentence), so `Order 1a2b · שרה · 2 lines` keeps its
 *   order; left-to-right text is left as it is.
 *
 * **Markdown** ({@link escapeMarkdown}): the Temporal UI renders the summary, details and current details of a
 * workflow (not activity summaries, which it shows as plain text) with gomarkdown (the UI server's `/render`,
 * `parser.CommonExtensions | AutoHeadingIDs` and `html.CommonFlags`: tables, autolinks of bare `http://`, `https://`,
 * `ftp://`, `file://` and `mailto:` URLs, strikethrough, MathJax `$…$`, superscript `^…^`, raw HTML, and SmartyPants,
 * which turns `--`, `...`, `(c)` and `1/2` into a dash, an ellipsis, © and a `<sup>`/`<sub>` fraction). Every character
 * in gomarkdown's escape set (`` \`*_{}[]()#+-.!:|&<>~^$ ``) is backslash-escaped, which CommonMark accepts too (all
 * are ASCII punctuation): no emphasis, link, image, HTML, table cell, heading, list, math or SmartyPants substitution
 * can form, and an escaped `:` or `.` breaks every autolink (`http\://x`, `www\.x`, `a@b\.example`). A `/` between
 * digits becomes `&#47;` (gomarkdown has no escape for it; the entity keeps the digits apart, so no fraction), and so
 * does the fraction slash U+2044 (`&#8260;`). What
 * SmartyPants still does is curl straight quotes (`'` → ’), which changes no meaning.
 */

/**
 * Invisible format characters: the Unicode format characters (General Category Cf) that are default-ignorable, that
 * is, render as nothing: every bidirectional control included. Not the joiners U+200C, U+200D. Plus the interlinear
 * annotation characters U+FFF9–U+FFFB (format characters that can hide text). Global, for `replace`.
 */
export const INVISIBLE =
  /[\u00AD\u061C\u180E\u200B\u200E\u200F\u202A-\u202E\u2060-\u206F\uFEFF\uFFF9-\uFFFB\u{1BCA0}-\u{1BCA3}\u{1D173}-\u{1D17A}\u{E0001}\u{E0020}-\u{E007F}]/gu;

/** {@link INVISIBLE} except U+2068 and U+2069, the isolate {@link isolateRtl} adds. */
const INVISIBLE_BUT_ISOLATES =
  /[\u00AD\u061C\u180E\u200B\u200E\u200F\u202A-\u202E\u2060-\u2067\u206A-\u206F\uFEFF\uFFF9-\uFFFB\u{1BCA0}-\u{1BCA3}\u{1D173}-\u{1D17A}\u{E0001}\u{E0020}-\u{E007F}]/gu;

/** C0 and C1 control characters: shown as a space. */
const CONTROLS = /[\u0000-\u001F\u007F-\u009F]/g; // eslint-disable-line no-control-regex

/**
 * Right-to-left letters: the blocks of the right-to-left scripts (Hebrew, Arabic, Syriac, Thaana, NKo, Samaritan,
 * Mandaic, their presentation forms, and the right-to-left ranges of the supplementary plane).
 */
const RTL = /[\u0590-\u08FF\uFB1D-\uFDFF\uFE70-\uFEFC\u{10800}-\u{10FFF}\u{1E800}-\u{1EFFF}]/u;

/** U+2068 FIRST STRONG ISOLATE. */
export const FSI = '\u2068';
/** U+2069 POP DIRECTIONAL ISOLATE. */
export const PDI = '\u2069';

/** `text` without invisible format characters, controls and line breaks as single spaces, trimmed. */
function oneLine(text: string, invisible: RegExp): string {
  return text.replace(invisible, '').replace(CONTROLS, ' ').replace(/\s+/g, ' ').trim();
}

/** `text` cut to `max` code points, the last one an ellipsis when it was longer. */
function cut(text: string, max: number): string {
  const points = Array.from(text);
  return points.length <= max ? text : `${points.slice(0, Math.max(0, max - 1)).join('')}…`;
}

/** `text` wrapped in FSI … PDI when it holds a right-to-left letter (see the file comment). */
function isolateRtl(text: string): string {
  return RTL.test(text) ? `${FSI}${text}${PDI}` : text;
}

/**
 * Text someone outside controls (a customer's name, a reason), ready to go into a line of ours, as plain text:
 * invisible format characters removed, controls and line breaks as spaces, trimmed, cut to `maxLength` code points
 * (with `…`), and isolated when it holds a right-to-left letter. Left-to-right text without such characters comes
 * back unchanged.
 * @param maxLength the most code points of the text itself (the isolate's two characters not counted).
 */
export function displayText(text: string, maxLength = Infinity): string {
  return isolateRtl(cut(oneLine(text, INVISIBLE), maxLength));
}

/**
 * A whole line of plain text (an activity summary, a search attribute), made safe: invisible format characters
 * removed except the isolates {@link displayText} adds, and of those only the pairs that close (an unpaired FSI or
 * PDI, e.g. cut off by a truncation, is removed); controls and line breaks as spaces; trimmed.
 */
export function plainLine(text: string): string {
  return balanceIsolates(oneLine(text, INVISIBLE_BUT_ISOLATES));
}

/** `text` without the FSI and PDI characters that have no partner (an FSI's partner is the next unmatched PDI). */
function balanceIsolates(text: string): string {
  if (!text.includes(FSI) && !text.includes(PDI)) return text;
  const open: number[] = [];
  const drop = new Set<number>();
  for (let i = 0; i < text.length; i++) {
    if (text[i] === FSI) open.push(i);
    else if (text[i] === PDI && open.pop() === undefined) drop.add(i);
  }
  for (const i of open) drop.add(i);
  if (drop.size === 0) return text;
  let out = '';
  for (let i = 0; i < text.length; i++) if (!drop.has(i)) out += text[i];
  return out;
}

/** Characters gomarkdown unescapes after a backslash (parser.EscapeChars); all are ASCII punctuation. */
const MARKDOWN_SPECIAL = /[\\`*_{}[\]()#+\-.!:|&<>~^$]/g;

/**
 * `text` as literal inline Markdown for the Temporal UI's renderer (and CommonMark): made one safe line by
 * {@link plainLine}, then every character of gomarkdown's escape set backslash-escaped and a `/` (or U+2044) between
 * digits written as a character reference (see the file comment), and so is an apostrophe followed by another (SmartyPants
 * turns `''` into a double quote). It renders as the characters of `text`: never a link, an image, HTML,
 * emphasis, a heading, a list, a table cell, math or a fraction.
 */
export function escapeMarkdown(text: string): string {
  return plainLine(text)
    .replace(MARKDOWN_SPECIAL, (c) => `\\${c}`)
    .replace(/(?<=\d)[/\u2044](?=\d)/g, (c) => (c === '/' ? '&#47;' : '&#8260;'))
    .replace(/'(?=')/g, '&#39;');
}
