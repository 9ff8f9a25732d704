/**
 * How `npm start` (scripts/stack.ts) shows its children's log lines. The API and the worker write one JSON object
 * per line (pino); by default each is rendered as one readable line by pino-pretty (time, level, message, then the
 * remaining fields, e.g. `orderId`, `activityType`, `attempt`); `LOG_FORMAT=json` keeps the raw JSON lines. Lines
 * that are not JSON (simulators, PostgreSQL, Temporal) pass through unchanged.
 */
import type { prettyFactory as PrettyFactory } from 'pino-pretty';

/** Formats one line of a child's output. */
export type LogLineFormatter = (line: string) => string;

/**
 * @param options.raw keep lines as they are (`LOG_FORMAT=json`).
 * @param options.colour colour the level and message (when the stack's own output is coloured).
 * @returns a formatter; the identity when `raw`, or when pino-pretty (a dev dependency) is not installed.
 */
export async function createLogLineFormatter(options: { raw: boolean; colour: boolean }): Promise<LogLineFormatter> {
  if (options.raw) return (line) => line;
  let prettyFactory: typeof PrettyFactory;
  try {
    ({ prettyFactory } = await import('pino-pretty'));
  } catch {
    return (line) => line;
  }
  const pretty = prettyFactory({
    colorize: options.colour,
    singleLine: true,
    translateTime: 'SYS:HH:MM:ss.l',
    ignore: 'pid,hostname,name,sdkComponent,req.headers,req.remoteAddress,req.remotePort,res.headers',
  });
  return (line) => {
    if (!line.startsWith('{')) return line;
    try {
      return pretty(line).replace(/\r?\n$/, '');
    } catch {
      return line;
    }
  };
}
