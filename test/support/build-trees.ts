// Pieces of the source trees build tests and bench/builds send: a package-lock.json of a package
// without dependencies (so `npm ci` runs and fetches nothing from the npm registry).
export const packageLock = (name: string): string =>
  JSON.stringify({ name, version: '1.0.0', lockfileVersion: 3, requires: true, packages: { '': { name, version: '1.0.0' } } });
