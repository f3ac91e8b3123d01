// ESLint flat config: the recommended rules of ESLint and typescript-eslint that need no type
// information (so `npm run lint` stays fast), plus a few of our own. Formatting is Prettier's job.
import js from '@eslint/js';
import { defineConfig } from 'eslint/config';
import globals from 'globals';
import tseslint from 'typescript-eslint';

export default defineConfig([
  { ignores: ['dist/', 'node_modules/', 'coverage/', 'data/', '.tmp/', 'web/dist/', 'web/src/schema.d.ts', 'test-artifacts/'] },
  js.configs.recommended,
  tseslint.configs.recommended,
  {
    languageOptions: { ecmaVersion: 2022, sourceType: 'module', globals: { ...globals.node } },
    linterOptions: { reportUnusedDisableDirectives: 'error' },
    rules: {
      eqeqeq: ['error', 'always', { null: 'ignore' }],
      'no-var': 'error',
      'prefer-const': ['error', { destructuring: 'all' }],
      'object-shorthand': ['error', 'properties'],
      '@typescript-eslint/consistent-type-imports': ['error', { fixStyle: 'inline-type-imports' }],
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none', ignoreRestSiblings: true }],
      // Adapters (database rows, driver callbacks, JSON bodies in tests) use `any` on purpose.
      '@typescript-eslint/no-explicit-any': 'off',
    },
  },
  // The dashboard runs in the browser.
  { files: ['web/src/**/*.{ts,tsx}'], languageOptions: { globals: { ...globals.browser } } },
]);
