import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['node_modules/', 'web/dist/', 'src/generated/', '.data/', 'scratch/', 'bench/results/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  { files: ['**/*.mjs', '**/*.js'], languageOptions: { globals: { process: 'readonly', console: 'readonly', URL: 'readonly' } } },
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', destructuredArrayIgnorePattern: '^_' }],
      '@typescript-eslint/no-explicit-any': 'off',
    },
  },
  {
    // LangChain and LangGraph are optional peers of the client's LangGraph adapter: the server,
    // the domain and the core client never load them.
    files: ['src/**/*.ts'],
    ignores: ['src/client/langgraph/**', 'src/cli/langgraph-*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        { patterns: [{ group: ['@langchain/*', 'zod', '**/client/langgraph/**', '**/cli/langgraph-*'], message: 'Only the LangGraph adapter and its demo agent load LangChain.' }] },
      ],
    },
  },
);
