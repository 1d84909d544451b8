// The platform's custom resources: group, version and plural of each kind, next to their types.
export * from './types.gen.js';

export const group = 'svc.dev';
export const version = 'v1alpha1';
export const apiVersion = `${group}/${version}` as const;

export const kinds = {
  App: { plural: 'apps' },
  Build: { plural: 'builds' },
  Sandbox: { plural: 'sandboxes' },
  Database: { plural: 'databases' },
  Domain: { plural: 'domains' },
} as const;

export type Kind = keyof typeof kinds;
