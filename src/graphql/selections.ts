import {
  getArgumentValues,
  getDirectiveValues,
  getNamedType,
  GraphQLIncludeDirective,
  GraphQLSkipDirective,
  isObjectType,
  type FieldNode,
  type GraphQLResolveInfo,
  type SelectionNode,
  type SelectionSetNode,
} from 'graphql';

/** Whether `@skip` and `@include` keep the selection, as graphql-js decides when it executes. */
const kept = (selection: SelectionNode, info: GraphQLResolveInfo) =>
  getDirectiveValues(GraphQLSkipDirective, selection, info.variableValues)?.if !== true &&
  getDirectiveValues(GraphQLIncludeDirective, selection, info.variableValues)?.if !== false;

/** The fields a selection set selects, through its fragments and inline fragments (whatever their type condition). */
export function fieldsOf(selectionSet: SelectionSetNode | undefined, info: GraphQLResolveInfo): FieldNode[] {
  return (selectionSet?.selections ?? []).flatMap((selection) => {
    if (!kept(selection, info)) return [];
    if (selection.kind === 'Field') return [selection];
    if (selection.kind === 'InlineFragment') return fieldsOf(selection.selectionSet, info);
    return fieldsOf(info.fragments[selection.name.value]?.selectionSet, info);
  });
}

/**
 * The arguments each selection of the field `name` of the resolved field's type will be resolved
 * with (defaults applied, variables read), one entry per selection (an alias is one): a
 * subscription checks them when it starts, since its fields resolve only with each event.
 */
export function argumentsOfSelected(info: GraphQLResolveInfo, name: string): Record<string, unknown>[] {
  const type = getNamedType(info.returnType);
  const field = isObjectType(type) ? type.getFields()[name] : undefined;
  if (!field) return [];
  return info.fieldNodes
    .flatMap((node) => fieldsOf(node.selectionSet, info))
    .filter((node) => node.name.value === name)
    .map((node) => getArgumentValues(field, node, info.variableValues));
}
