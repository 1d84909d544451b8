// The one logger. Components get a child with their name; request handlers add a request id.
// Credentials never reach a log line: bearer tokens, cookies and anything named like a secret are
// redacted wherever they appear in the logged object.
import { pino, type Logger, type LevelWithSilent } from 'pino';

export const redactedPaths = [
  'authorization',
  'cookie',
  'token',
  'password',
  '*.authorization',
  '*.cookie',
  '*.token',
  '*.password',
  '*.headers.authorization',
  '*.headers.cookie',
  '*.headers["set-cookie"]',
  'req.headers.authorization',
  'req.headers.cookie',
  'res.headers["set-cookie"]',
];

export function createLogger(
  component: string,
  level: LevelWithSilent = 'info',
  destination?: pino.DestinationStream,
): Logger {
  const options: pino.LoggerOptions = {
    level,
    base: { component },
    redact: { paths: redactedPaths, censor: '[redacted]' },
    timestamp: pino.stdTimeFunctions.isoTime,
  };
  return destination ? pino(options, destination) : pino(options);
}

export type { Logger };
