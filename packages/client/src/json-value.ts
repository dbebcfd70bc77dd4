// The JSON scalar as the client types it (codegen.ts maps the schema's JSON to it).

export type JsonValue = string | number | boolean | null | JsonValue[] | JsonObject;
/** `undefined` members are allowed because JSON.stringify drops them. */
export type JsonObject = { [key: string]: JsonValue | undefined };
