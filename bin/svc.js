#!/usr/bin/env node
// The `svc` CLI, compiled to dist/ by `make build` (or `npm run build`).
import '../dist/cli/svc.js';
