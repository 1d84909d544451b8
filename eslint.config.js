// typescript-eslint's type-checked recommendations, plus the rules that catch bugs this codebase
// has had: a promise nobody awaits (an unhandled rejection kills a Node process), `any` leaking past
// a boundary, and dead variables. Formatting is Prettier's (.prettierrc.json), not a lint rule.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/', 'node_modules/', '.svc/', '.dist-*/', 'bin/', 'lib/resources/types.gen.ts', 'eslint.config.js'] },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      // node:test's describe and it return promises the runner itself awaits.
      '@typescript-eslint/no-floating-promises': [
        'error',
        {
          allowForKnownSafeCalls: [
            {
              from: 'package',
              package: 'node:test',
              name: ['describe', 'it', 'test', 'suite', 'before', 'after', 'beforeEach', 'afterEach'],
            },
          ],
        },
      ],
      '@typescript-eslint/no-misused-promises': 'error',
      // An async function without await is how an interface's promise-returning member is written here.
      '@typescript-eslint/require-await': 'off',
      // Control characters in patterns are deliberate: they are what header, hostname and token checks refuse.
      'no-control-regex': 'off',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none' }],
    },
  },
);
