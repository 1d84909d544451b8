// What every object the App reconciler writes carries: its manager's name and the App as its owner.
import type * as k8s from '@kubernetes/client-node';
import { apiVersion, managers } from '../../lib/contract.js';
import type { App } from '../../lib/resources/index.js';

export const managerName = managers.controllers;

export function ownerRef(app: App): k8s.V1OwnerReference {
  return { apiVersion, kind: 'App', name: app.metadata.name!, uid: app.metadata.uid!, controller: true, blockOwnerDeletion: true };
}
