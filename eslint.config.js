// Lint rules, and the layering of src/ (which folder may import which). Whatever .gitignore ignores
// (an executor's data dir with full worktrees, build staging) is not linted.
import { includeIgnoreFile } from '@eslint/compat';
import js from '@eslint/js';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import tseslint from 'typescript-eslint';

/** Outside the executor's reach: it imports src/api and src/common and never the client, the action or the CLI. */
const EXECUTOR_FORBIDS = ['**/client/*', '**/action/*', '**/cli/*'];

/**
 * The executor's layer order (src/executor/layers.json, floors bottom-up; the wiring test reads it
 * too): a rule per room refusing imports of the rooms on its own floor and above. Read from the
 * import's text, so it sees other rooms' folders; an import within one folder of a file entry that
 * stands higher is left to the wiring test.
 */
function layerRules() {
  const { floors } = JSON.parse(readFileSync(new URL('src/executor/layers.json', import.meta.url), 'utf8'));
  const rooms = floors.flatMap((names, floor) => names.map(name => ({ name, floor })));
  const isFile = room => room.name.endsWith('.ts');
  const entry = room => (isFile(room) ? room.name.replace(/\.ts$/, '.js') : room.name);
  return rooms
    .filter(room => room.name !== 'index.ts')
    .map(room => {
      const forbidden = rooms.filter(
        other => other !== room && other.floor >= room.floor && other.name !== 'index.ts'
      );
      const patterns = forbidden.map(other => {
        const group = isFile(other) ? [`**/${entry(other)}`] : [`**/${other.name}/*`];
        // a file entry inside a forbidden folder that stands lower stays allowed
        for (const inside of rooms.filter(
          r => isFile(r) && r.name.startsWith(`${other.name}/`) && r.floor < room.floor
        )) {
          group.push(`!**/${entry(inside)}`);
        }
        return {
          group,
          message: `${room.name} is on floor ${room.floor + 1} and ${other.name} on floor ${other.floor + 1}: an import goes only down the layer order (src/executor/layers.json)`
        };
      });
      return {
        files: [isFile(room) ? `src/executor/${room.name}` : `src/executor/${room.name}/**/*.ts`],
        ignores: rooms
          .filter(r => isFile(r) && r.name.startsWith(`${room.name}/`))
          .map(r => `src/executor/${r.name}`),
        rules: {
          'no-restricted-imports': ['error', { patterns: [{ group: EXECUTOR_FORBIDS }, ...patterns] }]
        }
      };
    });
}

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
    // The contract and the helpers every side shares stand below everything: neither imports the other nor above.
    files: ['src/api/**/*.ts', 'src/common/**/*.ts'],
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
      'no-restricted-imports': ['error', { patterns: EXECUTOR_FORBIDS }]
    }
  },
  ...layerRules(),
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
