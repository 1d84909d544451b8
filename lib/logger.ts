// The one logger. Components get a child with their name; request handlers add a request id.
// Credentials never reach a log line: bearer tokens, cookies and anything named like a secret are
// redacted wherever they appear in the logged object.
import { pino, type Logger, type LevelWithSilent } from 'pino';

// Explicit paths, no wildcards: wildcard redaction walks every logged object and cost a fifth of
// the API's time per request in bench/api. Log credentials only under these names.
export const redactedPaths = [
  'authorization',
  'cookie',
  'token',
  'password',
  'secret',
  'headers.authorization',
  'headers.cookie',
  'headers["set-cookie"]',
  'req.headers.authorization',
  'req.headers.cookie',
  'res.headers["set-cookie"]',
];

export function createLogger(component: string, level: LevelWithSilent = 'info', destination?: pino.DestinationStream): Logger {
  const options: pino.LoggerOptions = {
    level,
    base: { component },
    redact: { paths: redactedPaths, censor: '[redacted]' },
    timestamp: pino.stdTimeFunctions.isoTime,
  };
  // Asynchronous writes to stdout: lines written in the same tick leave in one write, which keeps
  // the per-request access log cheap under load; pino flushes what is pending when the process exits.
  return pino(options, destination ?? pino.destination({ dest: 1, sync: false }));
}

export type { Logger };
