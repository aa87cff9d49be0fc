import { Node, type InterfaceDeclaration, type PropertySignature, type SourceFile, type Symbol as MorphSymbol } from "ts-morph";

/**
 * A member of the jobs interface itself whose type is a name the schema file
 * declares and exports under that same name is imported by name; anything
 * else is written as `Jobs["name"]` (inline types, types from other files,
 * generic instances, inherited members).
 */
export function payloadTypeText(
  declaration: PropertySignature,
  name: string,
  own: boolean,
  interfaceName: string,
  jobsInterface: InterfaceDeclaration,
  source: SourceFile,
  typeImports: Map<string, Node>,
): string {
  const node = declaration.getTypeNode();
  if (own && node && Node.isTypeReference(node) && node.getTypeArguments().length === 0) {
    const typeName = node.getTypeName();
    const symbol = Node.isIdentifier(typeName) ? typeName.getSymbol() : undefined;
    const local = symbol?.getDeclarations().every((d) => d.getSourceFile() === source) ?? false;
    if (symbol && local && exportedAs(source, symbol, typeName.getText())) {
      const at = symbol.getDeclarations()[0]!;
      typeImports.set(typeName.getText(), Node.hasName(at) ? at.getNameNode() : node);
      return typeName.getText();
    }
  }
  typeImports.set(interfaceName, jobsInterface.getNameNode());
  return `${interfaceName}[${JSON.stringify(name)}]`;
}

/** Whether `source` exports `symbol` itself (or an alias of it) under `name`. */
export function exportedAs(source: SourceFile, symbol: MorphSymbol | undefined, name: string): boolean {
  const exported = source.getExportSymbols().find((s) => s.getName() === name);
  if (!exported || !symbol) return false;
  const target = exported.isAlias() ? (exported.getAliasedSymbol() ?? exported) : exported;
  return target.compilerSymbol === symbol.compilerSymbol || exported.compilerSymbol === symbol.compilerSymbol;
}
