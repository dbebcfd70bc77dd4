import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['node_modules/', 'web/dist/', 'src/generated/', '.data/', 'scratch/', 'bench/results/', 'packages/*/dist/', '**/generated/graphql/'] },
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
    // LangChain, LangGraph and the AI SDK are optional peers of the client's adapters: the
    // server, the domain and the core client never load them.
    files: ['src/**/*.ts', 'packages/client/src/**/*.ts'],
    ignores: ['packages/client/src/langgraph/**', 'packages/client/src/ai-sdk/**', 'src/cli/langgraph-*.ts', 'src/cli/ai-sdk-*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            { group: ['@langchain/*', 'zod', '**/langgraph/**', '@agent-audit/client/langgraph', '**/cli/langgraph-*'], message: 'Only the LangGraph adapter and its demo agent load LangChain.' },
            { group: ['ai', 'ai/*', '**/ai-sdk/**', '@agent-audit/client/ai-sdk', '**/cli/ai-sdk-*'], message: 'Only the AI SDK adapter and its demo agent load the AI SDK.' },
          ],
        },
      ],
    },
  },
);
