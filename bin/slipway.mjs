#!/usr/bin/env node
// Entry point of the `slipway` command: runs the TypeScript sources through tsx.
import { register } from 'tsx/esm/api';

register();
await import('../src/cli.ts');
