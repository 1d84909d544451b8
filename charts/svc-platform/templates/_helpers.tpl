{{/* Labels every object of the release carries; `component` names the part. */}}
{{- define "svc.labels" -}}
app.kubernetes.io/name: svc-platform
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/version: {{ .root.Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .root.Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .root.Chart.Name .root.Chart.Version }}
app.kubernetes.io/component: {{ .component }}
{{- end }}

{{/* The labels a component's pods are selected by (never change on upgrade). */}}
{{- define "svc.selector" -}}
app.kubernetes.io/name: svc-platform
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end }}

{{/* An image reference of the platform's own: registry/repository:tag. */}}
{{- define "svc.image" -}}
{{- $v := .root.Values.image -}}
{{- $tag := $v.tag | default .root.Chart.AppVersion -}}
{{- if $v.registry }}{{ printf "%s/%s:%s" $v.registry .repository $tag }}{{ else }}{{ printf "%s:%s" .repository $tag }}{{ end -}}
{{- end }}

{{- define "svc.databaseSecret" -}}
{{- .Values.database.existingSecret | default (printf "%s-database" .Release.Name) -}}
{{- end }}

{{- define "svc.smtpSecret" -}}
{{- .Values.smtp.existingSecret | default (printf "%s-smtp" .Release.Name) -}}
{{- end }}

{{/* Whether outgoing mail is configured. */}}
{{- define "svc.smtp" -}}
{{- if or .Values.smtp.url .Values.smtp.existingSecret }}true{{ end -}}
{{- end }}

{{/* The API's machine listener as machines reach it (they fetch artifacts and keys there). */}}
{{- define "svc.machineUrl" -}}
{{- .Values.api.machineUrl | default (printf "http://%s-api.%s.svc:%d" .Release.Name .Release.Namespace (int .Values.api.machinePort)) -}}
{{- end }}

{{/*
Settings every component reads (lib/config.ts loads only the ones it needs): the database, the
apps' domain and URLs, mail, sign-in providers and the images the platform starts.
*/}}
{{- define "svc.commonEnv" -}}
- name: SVC_LOG_LEVEL
  value: {{ .Values.logLevel | quote }}
- name: SVC_STATE_DIR
  value: /var/lib/svc
- name: SVC_DATABASE_URL
  valueFrom:
    secretKeyRef:
      name: {{ include "svc.databaseSecret" . }}
      key: {{ .Values.database.existingSecretKey }}
- name: SVC_APPS_DOMAIN
  value: {{ .Values.appsDomain | quote }}
- name: SVC_APPS_URL_SUFFIX
  value: {{ .Values.appsUrlSuffix | quote }}
- name: SVC_AUTH_SECURE_COOKIES
  value: {{ .Values.tls.enabled | quote }}
- name: SVC_CERTIFICATES_NAMESPACE
  value: {{ .Values.certificates.namespace | quote }}
# Who issues custom domains' certificates: the API orders them, ingress-auth answers their HTTP-01
# challenges (with or without its HTTPS listener).
- name: SVC_CERTIFICATES_ISSUER
  value: {{ .Values.certificates.issuer | quote }}
{{- if eq .Values.certificates.issuer "cert-manager" }}
# The team's issuer the API's cert-manager Certificates name (docs/api/domains.md).
- name: SVC_CERT_MANAGER_ISSUER
  value: {{ required "certificates.certManager.issuerRef is required with certificates.issuer cert-manager" .Values.certificates.certManager.issuerRef | quote }}
{{- end }}
{{- with .Values.certificates.platformSecret }}
- name: SVC_CERTIFICATES_PLATFORM_SECRET
  value: {{ . | quote }}
{{- end }}
- name: SVC_ARTIFACT_KEY
  valueFrom:
    secretKeyRef:
      name: {{ .Release.Name }}-keys
      key: artifact-key
- name: SVC_ARTIFACT_URL
  value: {{ printf "%s/artifacts" (include "svc.machineUrl" .) | quote }}
- name: SVC_API_MACHINE_PORT
  value: {{ .Values.api.machinePort | quote }}
- name: SVC_RUNTIME_IMAGE
  value: {{ .Values.images.runtime | quote }}
- name: SVC_IMAGE_BUILDER
  value: {{ .Values.images.builder | quote }}
- name: SVC_SANDBOX_IMAGE
  value: {{ .Values.images.sandbox | quote }}
- name: SVC_IMAGE_POSTGRES
  value: {{ .Values.images.postgres | quote }}
# What serves a Database that names none (docs/decisions/0039-cloudnative-pg.md). The
# CloudNativePG settings whatever the default: Databases keep the provider they were made with, and
# their Clusters are applied with these (switching the default back must not rewrite them).
- name: SVC_DATABASE_PROVIDER
  value: {{ .Values.databases.provider | quote }}
{{- with .Values.databases.cloudnativePg }}
- name: SVC_DATABASE_CNPG_IMAGE
  value: {{ .image | quote }}
- name: SVC_DATABASE_CNPG_OPERATOR_NAMESPACE
  value: {{ .operatorNamespace | quote }}
- name: SVC_DATABASE_CNPG_INSTANCES
  value: {{ .instances | quote }}
{{- end }}
- name: SVC_SANDBOX_RUNTIME_CLASS
  value: {{ .Values.sandboxes.runtimeClass.name | quote }}
- name: SVC_USER_NAMESPACES
  value: {{ .Values.userNamespaces | quote }}
{{- with .Values.imageRegistries }}
- name: SVC_IMAGE_REGISTRIES
  value: {{ . | quote }}
{{- end }}
{{- if include "svc.smtp" . }}
- name: SVC_SMTP_URL
  valueFrom:
    secretKeyRef:
      name: {{ include "svc.smtpSecret" . }}
      key: {{ .Values.smtp.existingSecretKey }}
{{- end }}
{{- with .Values.smtp.from }}
- name: SVC_MAIL_FROM
  value: {{ . | quote }}
{{- end }}
{{- with .Values.identityProviders.oidc }}
{{- if .clientId }}
- name: SVC_IDP_ISSUER
  value: {{ .issuer | quote }}
- name: SVC_IDP_CLIENT_ID
  value: {{ .clientId | quote }}
- name: SVC_IDP_CLIENT_SECRET
  valueFrom:
    secretKeyRef:
      name: {{ $.Release.Name }}-identity-providers
      key: oidc-client-secret
{{- end }}
{{- end }}
{{- with .Values.identityProviders.codehost }}
{{- if .clientId }}
- name: SVC_CODEHOST_URL
  value: {{ .url | quote }}
- name: SVC_CODEHOST_API_URL
  value: {{ .apiUrl | quote }}
- name: SVC_CODEHOST_CLIENT_ID
  value: {{ .clientId | quote }}
- name: SVC_CODEHOST_CLIENT_SECRET
  valueFrom:
    secretKeyRef:
      name: {{ $.Release.Name }}-identity-providers
      key: codehost-client-secret
{{- end }}
{{- end }}
{{- end }}

{{/* Pod fields every component shares: no root, nothing writable but what is mounted. */}}
{{- define "svc.podSecurity" -}}
securityContext:
  runAsNonRoot: true
  runAsUser: 1000
  runAsGroup: 1000
  fsGroup: 1000
  seccompProfile:
    type: RuntimeDefault
{{- with .Values.image.pullSecrets }}
imagePullSecrets:
{{- range . }}
  - name: {{ . }}
{{- end }}
{{- end }}
terminationGracePeriodSeconds: {{ .Values.terminationGracePeriodSeconds }}
{{- end }}

{{- define "svc.containerSecurity" -}}
securityContext:
  allowPrivilegeEscalation: false
  readOnlyRootFilesystem: true
  capabilities:
    drop: [ALL]
{{- end }}

{{/* Replicas of a component spread over nodes, preferably. */}}
{{- define "svc.spread" -}}
{{- if .root.Values.topologySpread.enabled }}
topologySpreadConstraints:
  - maxSkew: 1
    topologyKey: {{ .root.Values.topologySpread.topologyKey }}
    whenUnsatisfiable: ScheduleAnyway
    labelSelector:
      matchLabels:
        {{- include "svc.selector" . | nindent 8 }}
{{- end }}
{{- end }}

{{- define "svc.pdb" -}}
{{- if .root.Values.podDisruptionBudget.enabled }}
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata:
  name: {{ .root.Release.Name }}-{{ .component }}
  namespace: {{ .root.Release.Namespace }}
  labels:
    {{- include "svc.labels" . | nindent 4 }}
spec:
  maxUnavailable: {{ .root.Values.podDisruptionBudget.maxUnavailable }}
  selector:
    matchLabels:
      {{- include "svc.selector" . | nindent 6 }}
{{- end }}
{{- end }}

{{/* The artifacts' object store, for the API and its migration (SVC_ARTIFACT_S3_*); nothing without an endpoint. */}}
{{- define "svc.objectStoreEnv" -}}
{{- with .Values.api.artifacts.s3 }}
{{- if .endpoint }}
- name: SVC_ARTIFACT_S3_ENDPOINT
  value: {{ .endpoint | quote }}
- name: SVC_ARTIFACT_S3_BUCKET
  value: {{ .bucket | quote }}
- name: SVC_ARTIFACT_S3_REGION
  value: {{ .region | quote }}
- name: SVC_ARTIFACT_S3_PREFIX
  value: {{ .prefix | quote }}
- name: SVC_ARTIFACT_S3_PATH_STYLE
  value: {{ .pathStyle | quote }}
- name: SVC_ARTIFACT_S3_ACCESS_KEY_ID
  valueFrom:
    secretKeyRef:
      name: {{ required "api.artifacts.s3.existingSecret is required with api.artifacts.s3.endpoint: the Secret holding the key pair" .existingSecret | quote }}
      key: {{ .accessKeyIdKey | quote }}
- name: SVC_ARTIFACT_S3_SECRET_ACCESS_KEY
  valueFrom:
    secretKeyRef:
      name: {{ .existingSecret | quote }}
      key: {{ .secretAccessKeyKey | quote }}
{{- end }}
{{- end }}
{{- end }}
