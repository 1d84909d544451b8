// A time as the pages show it: the reader's own locale rules in English, to the minute.

export function when(iso: string | null | undefined): string {
  return iso ? new Date(iso).toLocaleString('en', { dateStyle: 'medium', timeStyle: 'short' }) : 'unknown';
}

/** To the second, where several things happen in one minute (the events). */
export function whenExactly(iso: string): string {
  return new Date(iso).toLocaleString('en', { dateStyle: 'medium', timeStyle: 'medium' });
}
