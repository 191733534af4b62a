// Finds, in the executor's source, every call of a file-system or process function (what Node's
// node:fs and node:child_process export, their promise forms, and promisified execFile), by
// parsing each file with TypeScript: the list the privilege-separation test holds against its
// inventory (__tests__/unit/run-files-sites.test.ts).

import { readFileSync, readdirSync } from 'node:fs';
import { join, relative } from 'node:path';
import ts from 'typescript';

const MODULES = new Set([
  'node:fs',
  'fs',
  'node:fs/promises',
  'fs/promises',
  'node:child_process',
  'child_process'
]);

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap(entry => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}

/** `file#function` → how many calls, for every .ts file under `dir` (paths relative to `root`). */
export function fileSystemCalls(root: string, dir: string): Map<string, number> {
  const found = new Map<string, number>();
  for (const file of sourceFiles(join(root, dir))) {
    const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true);
    const named = new Map<string, string>();
    const namespaces = new Set<string>();
    const name = relative(root, file);
    const visit = (node: ts.Node): void => {
      if (ts.isImportDeclaration(node) && ts.isStringLiteral(node.moduleSpecifier)) {
        if (MODULES.has(node.moduleSpecifier.text)) {
          const bindings = node.importClause?.namedBindings;
          if (bindings && ts.isNamespaceImport(bindings)) namespaces.add(bindings.name.text);
          if (bindings && ts.isNamedImports(bindings))
            for (const element of bindings.elements) {
              const imported = (element.propertyName ?? element.name).text;
              if (imported === 'promises') namespaces.add(element.name.text);
              else named.set(element.name.text, imported);
            }
        }
      }
      // const exec = promisify(execFile)
      if (
        ts.isVariableDeclaration(node) &&
        ts.isIdentifier(node.name) &&
        node.initializer &&
        ts.isCallExpression(node.initializer) &&
        node.initializer.expression.getText(source) === 'promisify'
      ) {
        const wrapped = node.initializer.arguments[0]?.getText(source);
        if (wrapped && named.has(wrapped)) named.set(node.name.text, `promisify(${named.get(wrapped)})`);
      }
      if (ts.isCallExpression(node)) {
        const callee = node.expression;
        let call: string | undefined;
        if (ts.isIdentifier(callee) && named.has(callee.text)) call = named.get(callee.text);
        if (
          ts.isPropertyAccessExpression(callee) &&
          ts.isIdentifier(callee.expression) &&
          namespaces.has(callee.expression.text)
        )
          call = `fs.${callee.name.text}`;
        if (call) found.set(`${name}#${call}`, (found.get(`${name}#${call}`) ?? 0) + 1);
      }
      ts.forEachChild(node, visit);
    };
    visit(source);
  }
  return found;
}
