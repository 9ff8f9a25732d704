/**
 * The JSON request body, checked as text before it is parsed (body-parser's `verify` hook, so before `JSON.parse`,
 * the idempotency fingerprint and validation, each of which walks the parsed value):
 *
 * - **UTF-8 only** (RFC 8259 §8.1: JSON exchanged between systems "MUST be encoded using UTF-8"): a body declared in
 *   another charset is answered 415 `unsupported-media-type`.
 * - **Nesting depth** at most {@link JSON_BODY_MAX_DEPTH} arrays and objects: a deeper body is answered 400
 *   `validation-error` before anything recurses over it (a 40 KB body of 20,000 nested arrays used to exhaust the
 *   stack of a later recursive walk: a 500, or a 400 blaming a lone surrogate).
 * - **No duplicate member names** in an object (RFC 8259 §4: names SHOULD be unique, and parsers differ on which
 *   value wins; I-JSON, RFC 7493 §2.3: MUST NOT): 400 `validation-error` naming each duplicate, so no proxy or
 *   log reader that keeps the first value can disagree with this API, which would keep the last.
 *
 * The scan uses `jsonc-parser` (Microsoft's JSON scanner of VS Code) in strict JSON mode (no comments, no trailing
 * commas): it decodes member names (`"a"` and `"\u0061"` are one name) and reports every object and array as it
 * opens, so the depth check stops the scan at the limit, whatever the depth of the text. A body that is not valid
 * JSON is left to `JSON.parse`, which answers it 400 `malformed-json` as before.
 *
 * - **No card numbers**: a body carrying a card-number-like value anywhere (13–19 digits, spaces or dashes allowed,
 *   passing Luhn) is answered 422 `card-number-refused` before it is parsed, so it reaches no log, record or handler.
 */
import { visit } from 'jsonc-parser';
import { JSON_BODY_MAX_DEPTH } from './api-limits.js';
import { ProblemException, ProblemType, type ValidationErrorItem } from './problem-details.js';

/** Thrown inside the scan to stop it at the depth limit; carries the path of the container that went too deep. */
class TooDeep {
  constructor(readonly path: string) {}
}

/** Dotted path (`lines.0.sku`, `''` for the root) of a jsonc-parser path. */
function dotted(path: readonly (string | number)[]): string {
  return path.join('.');
}

/** What {@link scanJsonBody} found wrong with a body: nothing, too deep, or duplicate member names. */
export type JsonBodyFault =
  { kind: 'too-deep'; path: string; maxDepth: number } | { kind: 'duplicate-members'; errors: ValidationErrorItem[] };

/**
 * Scans a JSON text for nesting deeper than `maxDepth` and for duplicate member names, without building it.
 * @param text the body as text.
 * @param maxDepth the most arrays and objects that may be nested (the root container is depth 1).
 * @returns the first fault: `too-deep` (with the path of the container at the limit) as soon as it is seen, else
 *   every duplicate member (path of the member, message); `undefined` for a body without either, and for a text
 *   that is not valid JSON when it is not too deep (JSON.parse reports that).
 */
export function scanJsonBody(text: string, maxDepth: number = JSON_BODY_MAX_DEPTH): JsonBodyFault | undefined {
  // One entry per open container: the member names seen so far for an object, null for an array.
  const open: Array<Set<string> | null> = [];
  const duplicates: ValidationErrorItem[] = [];
  let malformed = false;
  const enter = (names: Set<string> | null, path: () => (string | number)[]): void => {
    if (open.length >= maxDepth) throw new TooDeep(dotted(path()));
    open.push(names);
  };
  try {
    visit(
      text,
      {
        onObjectBegin: (_offset, _length, _line, _column, path) => enter(new Set(), path),
        onArrayBegin: (_offset, _length, _line, _column, path) => enter(null, path),
        onObjectEnd: () => void open.pop(),
        onArrayEnd: () => void open.pop(),
        onObjectProperty: (name, _offset, _length, _line, _column, path) => {
          const names = open.at(-1);
          if (!names) return;
          if (names.has(name)) {
            duplicates.push({
              path: dotted([...path(), name]),
              message: `Duplicate member "${name}": each member name may appear once in an object`,
            });
          }
          names.add(name);
        },
        onError: () => {
          malformed = true;
        },
      },
      { disallowComments: true, allowTrailingComma: false },
    );
  } catch (err) {
    if (err instanceof TooDeep) return { kind: 'too-deep', path: err.path, maxDepth };
    throw err;
  }
  if (malformed || duplicates.length === 0) return undefined;
  return { kind: 'duplicate-members', errors: duplicates };
}

/** The 400 problem for a {@link JsonBodyFault}. */
export function jsonBodyProblem(fault: JsonBodyFault): ProblemException {
  if (fault.kind === 'too-deep') {
    const where = fault.path ? ` (at ${fault.path})` : '';
    return ProblemException.validation(
      [{ path: fault.path, message: `Nested deeper than ${fault.maxDepth} arrays and objects` }],
      `The body nests arrays and objects more than ${fault.maxDepth} levels deep${where}; at most ${fault.maxDepth} are accepted`,
    );
  }
  return ProblemException.validation(fault.errors);
}

/** Decodes UTF-8 and throws on an invalid byte sequence (a byte-order mark is kept, as `Buffer.toString` keeps it). */
const STRICT_UTF8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/** 400 `malformed-json` saying why the body cannot be read as JSON (`message` also goes into `errors`). */
export function malformedJson(message: string): ProblemException {
  return new ProblemException({
    status: 400,
    type: ProblemType.MalformedJson,
    title: 'Malformed JSON body',
    detail: message,
    extensions: { errors: [{ path: '', message }] },
  });
}

/** The charsets a JSON body may be declared in (RFC 8259 §8.1); body-parser reports `utf-8` for none. */
const UTF8 = new Set(['utf-8', 'utf8']);

/**
 * body-parser's `verify` hook for JSON bodies (runs on the raw bytes, before `JSON.parse`).
 * @throws ProblemException 415 `unsupported-media-type` for a charset other than UTF-8; 400 `malformed-json` for bytes
 *   that are not UTF-8; 400 `validation-error` for a body nested too deep or with duplicate member names (see the file
 *   comment).
 */
export function verifyJsonBody(_req: unknown, _res: unknown, body: Buffer, encoding: string): void {
  if (!UTF8.has(encoding.toLowerCase())) {
    throw new ProblemException({
      status: 415,
      type: ProblemType.UnsupportedMediaType,
      title: 'Unsupported media type',
      detail: `Send the body as UTF-8 JSON (RFC 8259 §8.1); got charset ${encoding}`,
    });
  }
  let text: string;
  try {
    text = STRICT_UTF8.decode(body);
  } catch {
    // `Buffer.toString` and body-parser would replace the bad bytes with U+FFFD and store those instead.
    throw malformedJson('The request body is not valid UTF-8 (RFC 8259 §8.1)');
  }
  if (carriesCardNumber(text)) {
    // The value itself is never echoed, stored or logged: the problem names no path and no digits.
    throw new ProblemException({
      status: 422,
      type: ProblemType.CardNumberRefused,
      detail:
        'The body carries a value that looks like a card number; this service never takes card numbers. Send a ' +
        'payment-method token (pm_…) instead.',
    });
  }
  const fault = scanJsonBody(text);
  if (fault) throw jsonBodyProblem(fault);
}

/**
 * Runs of 13 to 19 digits, single spaces or dashes allowed between them, standing on their own: not part of a longer
 * run (a digit, or a separator and a digit, on either side ends the candidate: a UUID of digits is not a card number)
 * nor of a word (a letter, digit or `_` right before or after: an id such as `pick_94acd483cec0528041337700`, whose
 * hexadecimal tail holds a Luhn-valid run of 13 digits, is not one; 1 report in 1,000 was refused before).
 */
const CARD_CANDIDATE = /(?<![0-9A-Za-z_]|[0-9][ -])[0-9](?:[ -]?[0-9]){12,18}(?![0-9A-Za-z_]|[ -][0-9])/g;

/** Whether `digits` passes the Luhn check (ISO/IEC 7812-1). */
export function luhnValid(digits: string): boolean {
  let sum = 0;
  for (let i = 0; i < digits.length; i++) {
    let d = digits.charCodeAt(digits.length - 1 - i) - 48;
    if (i % 2 === 1) {
      d *= 2;
      if (d > 9) d -= 9;
    }
    sum += d;
  }
  return sum % 10 === 0;
}

/**
 * Whether a JSON text carries a card-number-like value anywhere (a string or a number): 13 to 19 digits, spaces or
 * dashes allowed between them, passing the Luhn check.
 */
export function carriesCardNumber(text: string): boolean {
  for (const match of text.matchAll(CARD_CANDIDATE)) {
    if (luhnValid(match[0].replace(/[ -]/g, ''))) return true;
  }
  return false;
}
