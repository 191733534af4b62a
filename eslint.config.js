// Lint rules, and the layering of src/ (which folder may import which). Whatever .gitignore ignores
// (an executor's data dir with full worktrees, build staging) is not linted.
import { includeIgnoreFile } from '@eslint/compat';
import js from '@eslint/js';
import { fileURLToPath } from 'node:url';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  includeIgnoreFile(fileURLToPath(new URL('.gitignore', import.meta.url))),
  { ignores: ['dist/**', 'node_modules/**', 'coverage/**', '.build-*/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: {
      globals: {
        process: 'readonly',
        console: 'readonly',
        Buffer: 'readonly',
        URL: 'readonly',
        fetch: 'readonly',
        performance: 'readonly',
        crypto: 'readonly',
        setTimeout: 'readonly',
        clearTimeout: 'readonly',
        setImmediate: 'readonly',
        setInterval: 'readonly',
        clearInterval: 'readonly'
      }
    },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      'no-restricted-imports': 'off'
    }
  },
  {
    files: ['src/api/**/*.ts'],
    rules: {
      'no-restricted-imports': ['error', { patterns: ['../*', '!./*'] }]
    }
  },
  {
    files: ['src/client/**/*.ts'],
    rules: {
      'no-restricted-imports': ['error', { patterns: ['../action/*', '../executor/*', '../cli/*'] }]
    }
  },
  {
    files: ['src/cli/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        { patterns: ['**/action/*', '**/executor/*', '**/executor-action/*'] }
      ]
    }
  },
  {
    files: ['src/executor/**/*.ts'],
    rules: {
      'no-restricted-imports': ['error', { patterns: ['**/client/*', '**/action/*', '**/cli/*'] }]
    }
  },
  {
    // A run's life as data: it imports only the contract, so every part of the executor may use it.
    files: ['src/executor/runs/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [{ regex: '^\\.\\./(?!\\.\\./api/)', message: 'src/executor/runs imports only src/api' }]
        }
      ]
    }
  },
  {
    // An agent kind starts processes only through its context's `processes` (sandbox/spawn.ts),
    // which confines each in the run's sandbox: it may not spawn around it, nor make a spawner.
    files: ['src/executor/agents/**/*.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': [
        'error',
        {
          paths: ['node:child_process', 'child_process', 'node:cluster', 'cluster'].map(name => ({
            name,
            message:
              "an agent kind starts processes only through its context's `processes` (the run's sandbox)"
          })),
          patterns: [
            {
              group: ['**/sandbox/*', '**/sandbox'],
              allowTypeImports: true,
              message: 'an agent kind receives the sandbox in its context; it may import its types only'
            }
          ]
        }
      ]
    }
  }
);
