import { describe, expect, it } from 'vitest';
import ts from 'typescript';

// The package entry as TypeScript finds it, whatever the user's moduleResolution.

describe('the package entry', () => {
  it('resolves for TypeScript under every module resolution, node10 included', () => {
    const from = new URL(import.meta.url).pathname;
    for (const moduleResolution of [ts.ModuleResolutionKind.Node10, ts.ModuleResolutionKind.Node16, ts.ModuleResolutionKind.Bundler]) {
      const options = { moduleResolution, module: moduleResolution === ts.ModuleResolutionKind.Bundler ? ts.ModuleKind.ESNext : ts.ModuleKind.Node16 };
      const { resolvedModule } = ts.resolveModuleName('@agent-audit/client', from, options, ts.sys);
      expect(resolvedModule?.resolvedFileName, `moduleResolution ${ts.ModuleResolutionKind[moduleResolution]}`).toMatch(/client\/dist\/index\.d\.ts$/);
    }
  });
});
