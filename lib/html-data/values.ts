// What a form sends, read against the fields its collection declares (compile.ts): the same rules the
// browser applied to the form (type, required, length, range, choices), checked again on the server,
// where they bind. Declared fields only; every refusal names the field. Pure: the endpoint that
// stores records calls it with the submitted values and answers 400 with its message.
import type { FieldSpec } from './compile.js';

/** A stored field value. */
export type FieldValue = string | number | boolean | null;

export class RecordInputError extends Error {
  override name = 'RecordInputError';
}

const fail = (message: string): never => {
  throw new RecordInputError(message);
};

/**
 * The values of `names` (the form's fields) read from `input` (a form's fields as strings, or JSON
 * values), typed by `fields`. `create` reads every named field (a checkbox left out is false, an
 * empty optional field null); `update` reads only those present. Anything `input` holds beyond
 * `names` is refused, never ignored.
 */
export function readRecord(
  fields: Readonly<Record<string, FieldSpec>>,
  names: readonly string[],
  input: Readonly<Record<string, unknown>>,
  mode: 'create' | 'update',
): Record<string, FieldValue> {
  for (const key of Object.keys(input))
    if (!names.includes(key)) fail(`${key} is not a field of this form (its fields: ${names.join(', ')})`);
  const out: Record<string, FieldValue> = {};
  for (const name of names) {
    const spec = fields[name];
    if (!spec) fail(`${name} is not a declared field`);
    const present = Object.hasOwn(input, name);
    if (!present && mode === 'update') continue;
    out[name] = readValue(name, spec!, present ? input[name] : undefined);
  }
  return out;
}

function readValue(name: string, spec: FieldSpec, raw: unknown): FieldValue {
  if (Array.isArray(raw)) fail(`${name} is sent more than once`);
  switch (spec.kind) {
    case 'boolean':
      // An unchecked checkbox is not sent at all; a checked one sends its value ("on" unless set).
      if (raw === undefined || raw === null || raw === false || raw === 'false' || raw === '') return false;
      if (raw === true || typeof raw === 'string') return true;
      return fail(`${name} is a checkbox: true or false`);
    case 'number': {
      if (raw === undefined || raw === null || raw === '') return spec.required ? fail(`${name} is required`) : null;
      const n =
        typeof raw === 'number'
          ? raw
          : typeof raw === 'string' && /^\s*-?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?\s*$/.test(raw)
            ? Number(raw)
            : NaN;
      if (!Number.isFinite(n)) fail(`${name} is a number, not ${JSON.stringify(raw).slice(0, 40)}`);
      if (spec.integer && !Number.isInteger(n)) fail(`${name} is a whole number`);
      if (spec.min !== undefined && n < spec.min) fail(`${name} is at least ${spec.min}`);
      if (spec.max !== undefined && n > spec.max) fail(`${name} is at most ${spec.max}`);
      return n;
    }
    case 'choice': {
      if (raw === undefined || raw === null || raw === '') return spec.required ? fail(`${name} is required`) : null;
      if (typeof raw !== 'string' || !spec.choices.includes(raw)) fail(`${name} is one of ${spec.choices.join(', ')}`);
      return raw as string;
    }
    case 'text': {
      if (raw === undefined || raw === null || raw === '') return spec.required ? fail(`${name} is required`) : null;
      if (typeof raw !== 'string') return fail(`${name} is text`);
      // Lengths as the browser counts them (UTF-16 code units), so what the form allowed is allowed.
      if (raw.length > spec.maxLength) fail(`${name} is at most ${spec.maxLength} characters`);
      if (raw.length < spec.minLength) fail(`${name} is at least ${spec.minLength} characters`);
      // PostgreSQL's text holds no NUL, and no other control character belongs in a form's field.
      if (/[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f]/.test(raw)) fail(`${name} holds a control character`);
      if (spec.format && !formats[spec.format](raw)) fail(`${name} is not ${formatNames[spec.format]}`);
      return raw;
    }
  }
}

// The browser's own definition of a valid e-mail address (HTML's input type=email).
const email =
  /^[a-zA-Z0-9.!#$%&'*+/=?^_`{|}~-]+@[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?(?:\.[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?)*$/;

const formats: Record<NonNullable<Extract<FieldSpec, { kind: 'text' }>['format']>, (v: string) => boolean> = {
  email: (v) => email.test(v),
  // Only http and https: a stored link is put in href or src, where javascript: or data: would run.
  url: (v) => {
    try {
      const u = new URL(v);
      return (u.protocol === 'https:' || u.protocol === 'http:') && u.hostname !== '';
    } catch {
      return false;
    }
  },
  date: (v) => /^\d{4}-\d{2}-\d{2}$/.test(v) && validDate(v),
  time: (v) => /^([01]\d|2[0-3]):[0-5]\d(:[0-5]\d(\.\d{1,3})?)?$/.test(v),
  datetime: (v) => {
    const m = /^(\d{4}-\d{2}-\d{2})T([01]\d|2[0-3]):[0-5]\d(:[0-5]\d(\.\d{1,3})?)?$/.exec(v);
    return m !== null && validDate(m[1]!);
  },
};

const formatNames = {
  email: 'an e-mail address',
  url: 'an http or https URL',
  date: 'a date (YYYY-MM-DD)',
  time: 'a time (HH:MM)',
  datetime: 'a date and time (YYYY-MM-DDTHH:MM)',
};

function validDate(v: string): boolean {
  const d = new Date(`${v}T00:00:00Z`);
  return !Number.isNaN(d.getTime()) && d.toISOString().startsWith(v);
}
