import {
  BREAK,
  Kind,
  TypeInfo,
  getNamedType,
  isScalarType,
  isSpecifiedScalarType,
  visit,
  visitWithTypeInfo,
  type DocumentNode,
  type GraphQLSchema,
} from 'graphql';

/**
 * Whether a document writes a value of a custom scalar (BigInt, DateTime, JSON) inline, as a
 * literal argument or a variable's default. graphql-jit cannot run such a document as written: it
 * parses literals once, when it compiles, and then embeds them in its code as JSON, which carries
 * neither a BigInt nor a variable inside a JSON literal. graphql-js parses them per execution.
 * Decided once per parsed document (yoga caches those).
 */
export function customScalarLiterals(schema: GraphQLSchema): (document: DocumentNode) => boolean {
  const decided = new WeakMap<DocumentNode, boolean>();
  return (document) => {
    let found = decided.get(document);
    if (found === undefined) {
      found = false;
      const typeInfo = new TypeInfo(schema);
      const isCustom = () => {
        const type = typeInfo.getInputType();
        const named = type && getNamedType(type);
        return isScalarType(named) && !isSpecifiedScalarType(named);
      };
      visit(
        document,
        visitWithTypeInfo(typeInfo, {
          enter(node) {
            // A variable is coerced per execution by either executor; only literals matter.
            if (!VALUE_KINDS.has(node.kind) || !isCustom()) return undefined;
            found = true;
            return BREAK;
          },
        }),
      );
      decided.set(document, found);
    }
    return found;
  };
}

const VALUE_KINDS: ReadonlySet<Kind> = new Set([
  Kind.INT,
  Kind.FLOAT,
  Kind.STRING,
  Kind.BOOLEAN,
  Kind.NULL,
  Kind.ENUM,
  Kind.LIST,
  Kind.OBJECT,
]);
