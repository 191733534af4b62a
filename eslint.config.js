import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
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
  }
);
