/**
 * Problem details for requests Node's HTTP parser refuses before any framework code runs: a control character in a
 * header (`Idempotency-Key: ab\x01cd`), a malformed request line, headers over `--max-http-header-size`, a request
 * that timed out. Without a listener Node answers those with a bare `HTTP/1.1 400 Bad Request` and no body; with
 * this one the answer is the same status as Node would send, as `application/problem+json` (RFC 9457), and the
 * connection closes (the parser cannot resynchronise on the byte stream).
 *
 * Rule source: Node.js docs, http.Server event 'clientError' (https://nodejs.org/api/http.html#event-clienterror):
 * the listener owns the socket; it writes a raw HTTP response only while the socket is writable and no response has
 * started, and must close it.
 */
import { RAW_SECURITY_HEADERS } from './security-headers.js';
import type { Server } from 'node:http';
import type { Duplex } from 'node:stream';
import { PROBLEM_JSON, type ProblemDetails, ProblemType, defaultTitle } from './problem-details.js';

/** An error of Node's HTTP parser (`llhttp`): its `code` is `HPE_*`, or `ERR_HTTP_REQUEST_TIMEOUT`. */
interface ClientError extends Error {
  code?: string;
}

/** Status and explanation per parser error code; anything else is a 400 like Node's own answer. */
const PARSER_ERRORS: Readonly<Record<string, { status: number; detail: string }>> = {
  HPE_HEADER_OVERFLOW: { status: 431, detail: 'The request headers are larger than the server accepts' },
  HPE_CHUNK_EXTENSIONS_OVERFLOW: { status: 413, detail: 'The chunk extensions of the request body are too large' },
  ERR_HTTP_REQUEST_TIMEOUT: { status: 408, detail: 'The request was not received completely in time' },
  HPE_INVALID_HEADER_TOKEN: {
    status: 400,
    detail:
      'A header name or value contains a character HTTP does not allow (control characters such as 0x00-0x1F and 0x7F)',
  },
  HPE_INVALID_METHOD: { status: 400, detail: 'The request method is not a valid HTTP token' },
  HPE_INVALID_URL: { status: 400, detail: 'The request target is not a valid URL' },
  HPE_INVALID_VERSION: { status: 400, detail: 'The HTTP version is not valid' },
  HPE_INVALID_CONTENT_LENGTH: { status: 400, detail: 'The Content-Length header is not valid' },
  HPE_UNEXPECTED_CONTENT_LENGTH: { status: 400, detail: 'Content-Length and Transfer-Encoding must not both be sent' },
  HPE_INVALID_TRANSFER_ENCODING: { status: 400, detail: 'The Transfer-Encoding header is not valid' },
  HPE_INVALID_CHUNK_SIZE: { status: 400, detail: 'A chunk size of the request body is not valid' },
};

/**
 * The raw HTTP/1.1 response for a parser error: status line, `Content-Type: application/problem+json`,
 * `Content-Length`, the security headers of every response (./security-headers.ts), `Connection: close`, and the problem document (type `malformed-request`, `parserError` the
 * parser's code).
 */
export function clientErrorResponse(err: ClientError): string {
  const known = (err.code && PARSER_ERRORS[err.code]) || undefined;
  const status = known?.status ?? 400;
  const problem: ProblemDetails = {
    type: ProblemType.MalformedRequest,
    title: 'Malformed HTTP request',
    status,
    detail: known?.detail ?? 'The request is not valid HTTP/1.1',
    ...(err.code ? { parserError: err.code } : {}),
  };
  const body = JSON.stringify(problem);
  return (
    `HTTP/1.1 ${status} ${defaultTitle(status)}\r\n` +
    `Content-Type: ${PROBLEM_JSON}; charset=utf-8\r\n` +
    `Content-Length: ${Buffer.byteLength(body)}\r\n` +
    RAW_SECURITY_HEADERS.map(([name, value]) => `${name}: ${value}\r\n`).join('') +
    'Connection: close\r\n' +
    '\r\n' +
    body
  );
}

/**
 * Installs the 'clientError' listener on `server` (the API's http.Server). Connection resets and sockets that are
 * no longer writable are only destroyed; a socket whose response already started gets no second response.
 */
export function installClientErrorHandler(server: Server): void {
  server.on('clientError', (err: ClientError, socket: Duplex) => {
    const started = (socket as Duplex & { _httpMessage?: { headersSent?: boolean } })._httpMessage?.headersSent;
    if (err.code === 'ECONNRESET' || !socket.writable || started) {
      socket.destroy();
      return;
    }
    socket.end(clientErrorResponse(err));
  });
}
