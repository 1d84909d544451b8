// Machine `ordinal` of a service as a Pod: its name, labels, owner, artifact credential, scheduling and node.
import type * as k8s from '@kubernetes/client-node';
import { artifactCredentialTtlSeconds, mintArtifactCredential } from '../../lib/artifacts/credential.js';
import { servicesOf, type ServiceView } from '../../lib/app-services.js';
import { annotations, containers, labels } from '../../lib/contract.js';
import type { App } from '../../lib/resources/index.js';
import { pullSecretName } from '../../lib/registry/names.js';
import type { AppSettings } from './desired.js';
import { machineSpec, placementOf, servedByRuntime } from './machine-spec.js';
import { managerName, ownerRef } from './owner.js';
import { revisionOf } from './revision.js';

/** The labels every machine of `view` carries (the public one's are what the app's Service selects). */
function serviceLabels(view: ServiceView): Record<string, string> {
  return { ...(view.name !== undefined ? { [labels.service]: view.name } : {}), ...(view.public ? { [labels.public]: 'true' } : {}) };
}

/**
 * Machine `ordinal` of `view` as a Pod created at `now`. Its runtime gets a fresh artifact
 * credential, which is not part of the revision: a machine is not replaced because its credential aged.
 */
export function machinePod(
  app: App,
  ordinal: number,
  settings: AppSettings,
  now = new Date(),
  view: ServiceView = servicesOf(app.spec)[0]!,
): k8s.V1Pod {
  const name = app.metadata.name!;
  const revision = revisionOf(app, settings, ordinal, view);
  const node = placementOf(app, ordinal, view);
  const spec = machineSpec(app, settings, ordinal, view);
  // The runtime fetches the App's artifact (machine-spec.ts) and shows this credential: the machine
  // container of the public service of a kind the runtime serves, never one an app's variables name.
  const fetching = servedByRuntime(app, view) ? spec.containers.find((c) => c.name === containers.machine) : undefined;
  if (fetching && settings.artifactKey && app.spec.source) {
    const expires = new Date(now.getTime() + artifactCredentialTtlSeconds * 1000);
    fetching.env = [
      ...(fetching.env ?? []),
      { name: 'SVC_ARTIFACT_TOKEN', value: mintArtifactCredential(settings.artifactKey, app.spec.source.digest, expires) },
    ];
  }
  const spread = { [labels.app]: name, ...(view.public ? {} : { [labels.service]: view.name! }) };
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: view.public ? `${name}-m${ordinal}-${revision}` : `${name}-${view.name}-m${ordinal}-${revision}`,
      namespace: app.metadata.namespace,
      labels: {
        [labels.app]: name,
        ...serviceLabels(view),
        [labels.machine]: String(ordinal),
        [labels.revision]: revision,
        [labels.managedBy]: managerName,
      },
      annotations: { ...(app.spec.deployId ? { [annotations.deploy]: app.spec.deployId } : {}) },
      ownerReferences: [ownerRef(app)],
    },
    spec: {
      ...spec,
      restartPolicy: spec.restartPolicy ?? 'Always',
      terminationGracePeriodSeconds: 10,
      automountServiceAccountToken: false,
      enableServiceLinks: false,
      // The account's own pull credential (controllers/account/): its images and the platform's, no other account's.
      ...(settings.images?.platformRegistry ? { imagePullSecrets: [{ name: pullSecretName }] } : {}),
      // Machines of one service prefer different nodes.
      topologySpreadConstraints: [
        { maxSkew: 1, topologyKey: 'kubernetes.io/hostname', whenUnsatisfiable: 'ScheduleAnyway', labelSelector: { matchLabels: spread } },
      ],
      ...(node
        ? {
            affinity: {
              nodeAffinity: {
                requiredDuringSchedulingIgnoredDuringExecution: {
                  nodeSelectorTerms: [{ matchExpressions: [{ key: 'kubernetes.io/hostname', operator: 'In', values: [node] }] }],
                },
              },
            },
          }
        : {}),
    },
  };
}
